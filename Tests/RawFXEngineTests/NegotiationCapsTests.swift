import Foundation
import RawFX
import XCTest
@testable import RawFXTestSupport

/// A filter's latency, block and output sizes are bounded by the host before it sizes
/// anything from them (rawfx.h's caps), in process and in an isolated stage's proxy: a hostile
/// or broken plugin's 0xFFFFFFFF is a refused configure that names the cap, where it used to
/// be a 34 GB allocation that aborted the host (even under `@isolate(seccomp=strict)`), a
/// drain that never ended (1e8), or an abort in process (a block of 0xFFFFFFF0).
final class NegotiationCapsTests: XCTestCase {
    /// The faulty fixture built to answer `define` in configure (Fixtures/faulty_plugin.c).
    func claiming(_ define: String) throws -> PluginRegistry {
        let path = try compileCPlugin(repositoryRoot.appendingPathComponent("Tests/Fixtures/faulty_plugin.c"),
                                      defines: [define], into: temporaryDirectory(), name: "libfaulty.so")
        let registry = PluginRegistry.empty(environment: [:])
        try registry.load(path: path)
        return registry
    }

    func assertRefused(_ chain: String, _ registry: PluginRegistry, audio: Bool, _ says: String,
                       file: StaticString = #filePath, line: UInt = #line) {
        do {
            if audio {
                try AudioChain(chain, registry: registry).negotiate(AudioFormat(sampleRate: 48000, channels: 1))
            } else {
                try VideoChain(chain, registry: registry).negotiate(VideoFormat(width: 64, height: 32))
            }
            XCTFail("\(chain): the negotiation was accepted", file: file, line: line)
        } catch {
            XCTAssertTrue("\(error)".contains(says), "\(chain): \(error)", file: file, line: line)
        }
    }

    func testAudioLatencyBlockAndOutputSizesAreCappedInProcessAndIsolated() throws {
        let cases: [(define: String, says: String)] = [
            ("FAULTY_CLAIM_LATENCY=4294967295u", "a latency of 4294967295 frames is over the host's cap of 1048576 frames (RAWFX_MAX_AUDIO_FRAMES)"),
            ("FAULTY_CLAIM_LATENCY=100000000", "a latency of 100000000 frames is over the host's cap of 1048576 frames"),
            ("FAULTY_CLAIM_BLOCK=4294967280u", "a block of 4294967280 frames is over the host's cap of 1048576 frames"),
            ("FAULTY_CLAIM_MAX_OUTPUT=4294967295u", "max_output_frames 4294967295 frames is over the host's cap of 1048576 frames"),
        ]
        for c in cases {
            let registry = try claiming(c.define)
            assertRefused("faulty_audio", registry, audio: true, c.says)
            assertRefused("faulty_audio@isolate", registry, audio: true, c.says)
            assertRefused("faulty_audio@isolate(seccomp=strict)", registry, audio: true, c.says)
        }
        // At the cap itself: accepted, and a stream drains in finite time.
        let atCap = try claiming("FAULTY_CLAIM_LATENCY=1048576")
        let chain = try AudioChain("faulty_audio", registry: atCap)
        try chain.negotiate(AudioFormat(sampleRate: 48000, channels: 1))
        XCTAssertEqual(chain.latency, 1_048_576)
    }

    func testVideoLatencyIsCapped() throws {
        let registry = try claiming("FAULTY_CLAIM_LATENCY=65")
        let says = "a latency of 65 frames is over the host's cap of 64 frames (RAWFX_MAX_VIDEO_LATENCY_FRAMES)"
        assertRefused("faulty_video", registry, audio: false, says)
        assertRefused("faulty_video@isolate", registry, audio: false, says)
        let atCap = try VideoChain("faulty_video", registry: try claiming("FAULTY_CLAIM_LATENCY=64"))
        try atCap.negotiate(VideoFormat(width: 64, height: 32))
        XCTAssertEqual(atCap.latency, 64)
    }
}
