import XCTest
import RawFXAllocCounter
final class SmokeTests: XCTestCase {
    func testCounter() {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1)
        let before = rawfx_thread_allocation_count()
        let a = [Int](repeating: 1, count: 100)
        XCTAssertGreaterThan(rawfx_thread_allocation_count(), before)
        _ = a
    }
}
