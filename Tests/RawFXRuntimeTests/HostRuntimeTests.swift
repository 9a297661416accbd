import Foundation
import RawFX
import Synchronization
import XCTest
@testable import RawFXTestSupport

/// The runtime's locks (host.c, docs/threading.md): code from outside the runtime (the log
/// handler, a plugin's on_callback) runs on the service thread under no lock that creating or
/// destroying a host object takes, so a slow or blocked handler never stalls the control
/// threads that build chains.
final class HostRuntimeTests: XCTestCase {
    func testABlockedLogHandlerDoesNotStopHostObjectsBeingCreatedAndFreed() throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let blockedOnce = Atomic<Bool>(false)
        RawFXLog.setHandler { record in
            guard record.message == "block the service thread here",
                  !blockedOnce.exchange(true, ordering: .relaxed) else { return }
            entered.signal()
            release.wait()
        }
        defer {
            release.signal()
            RawFXLog.sync()
            RawFXLog.setHandler(nil)
        }
        RawFXLog.log(.error, source: "test", "block the service thread here")
        XCTAssertEqual(entered.wait(timeout: .now() + 30), .success, "the handler never ran")

        // The service thread is inside the handler now. Creating and freeing host objects (what
        // every filter instance does) takes the registry lock: it must not wait for the handler.
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for index in 0..<20 { _ = HostContext(source: "instance \(index)", kind: .instance) }
            done.signal()
        }
        let outcome = done.wait(timeout: .now() + 20)
        release.signal()
        XCTAssertEqual(outcome, .success, "creating host objects waited for the log handler")
        if outcome != .success { _ = done.wait(timeout: .now() + 20) }  // let it finish before the test ends
    }
}
