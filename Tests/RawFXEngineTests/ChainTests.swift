import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import XCTest
@testable import RawFXTestSupport

/// Chain syntax, parameter validation, negotiation, odd strides, swaps and allocations.
final class ChainTests: XCTestCase {
    var directory: URL!
    var registry: PluginRegistry!

    override func setUpWithError() throws {
        directory = temporaryDirectory()
        registry = PluginRegistry.empty()
        try registry.load(path: compileCPlugin(invertSource, into: directory, name: "invert.so"))
        try registry.load(path: compileCPlugin(fixtureSource, into: directory, name: "stamp.so"))
        for library in builtPlugins.libraries where library.filters.contains(where: { $0.id == "null" }) {
            try registry.load(path: library.path)
        }
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    // MARK: Syntax

    func testChainSyntax() throws {
        let specs = try FilterSpec.parseChain("watermark=image='/a:b,c.png':opacity=0.8, scale=1280:720 ,rotate")
        XCTAssertEqual(specs, [
            FilterSpec("watermark", [("image", "/a:b,c.png"), ("opacity", "0.8")]),
            FilterSpec(name: "scale", arguments: [.init(key: nil, value: "1280"), .init(key: nil, value: "720")]),
            FilterSpec(name: "rotate"),
        ])
        XCTAssertEqual(try FilterSpec.parseChain(FilterSpec.chainText(specs)), specs)
        XCTAssertEqual(try FilterSpec.parseChain(""), [])
        XCTAssertEqual(try FilterSpec.parseChain(#"a=x=1\,2"#), [FilterSpec("a", [("x", "1,2")])])
    }

    func testSyntaxErrorsSayWhere() {
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a=x='open")) {
            XCTAssertEqual($0.description, "chain 'a=x='open': a quote is not closed at character 10")
        }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a,,b")) {
            XCTAssertEqual($0, .syntax(chain: "a,,b", offset: 2, reason: "a filter name is missing"))
        }
    }

    // MARK: Parameter validation

    func testUnknownFilterListsKnownOnes() {
        XCTAssertThrowsChainError(try VideoChain("nosuch", registry: registry)) {
            guard case .unknownFilter("nosuch", let known) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(known.contains("invert") && known.contains("stamp"))
        }
    }

    func testUnknownParameterListsValidOnes() {
        XCTAssertThrowsChainError(try VideoChain("stamp=colour=3", registry: registry)) {
            XCTAssertEqual($0, .unknownParameter(filter: "stamp", parameter: "colour", valid: ["value", "max_width"]))
            XCTAssertEqual($0.description, "stamp: unknown parameter 'colour'; valid parameters: value, max_width")
        }
    }

    func testWrongTypeAndOutOfRange() {
        XCTAssertThrowsChainError(try VideoChain("stamp=value=abc", registry: registry)) {
            XCTAssertEqual($0.description, "stamp: invalid value 'abc' for value: expected an integer from 0 to 100")
        }
        XCTAssertThrowsChainError(try VideoChain("stamp=value=101", registry: registry)) {
            XCTAssertEqual($0, .invalidValue(filter: "stamp", parameter: "value", value: "101", expected: "an integer from 0 to 100"))
        }
        XCTAssertThrowsChainError(try VideoChain("invert=chroma=maybe", registry: registry)) {
            XCTAssertEqual($0.description, "invert: invalid value 'maybe' for chroma: expected true or false")
        }
        XCTAssertThrowsChainError(try VideoChain("stamp=1:2:3", registry: registry)) {
            guard case .tooManyValues(filter: "stamp", count: 3, _) = $0 else { return XCTFail("\($0)") }
        }
    }

    func testMediaKindMismatch() throws {
        guard builtPlugins.filterTypes.contains(where: { $0.id == "gain" }) else { return }
        let audio = PluginRegistry(environment: [:])
        XCTAssertThrowsChainError(try VideoChain("gain", registry: audio)) {
            XCTAssertEqual($0, .wrongMediaKind(filter: "gain", filterKind: .audio, chainKind: .video))
        }
    }

    // MARK: Negotiation

    func testNegotiationRefusalNamesFilterFormatAndReason() throws {
        let chain = try VideoChain("invert,stamp=max_width=640", registry: registry)
        XCTAssertThrowsChainError(try chain.negotiate(VideoFormat(width: 1280, height: 720))) {
            XCTAssertEqual($0.description, "stamp refused 1280x720 I420 limited range: width 1280 is over max_width 640")
        }
        XCTAssertEqual(try chain.negotiate(VideoFormat(width: 640, height: 360)), VideoFormat(width: 640, height: 360))
    }

    func testChainKnowsOutputFormatAndLatencyBeforeTheFirstFrame() throws {
        let chain = try VideoChain("null,copy,invert", registry: registry)
        let out = try chain.negotiate(VideoFormat(width: 320, height: 240, colorRange: .full))
        XCTAssertEqual(out, VideoFormat(width: 320, height: 240, colorRange: .full))
        XCTAssertEqual(chain.outputFormat, out)
        XCTAssertEqual(chain.latency, 0)
    }

    // MARK: Frames

    func testCFilterWithOddStridesTouchesNoPadding() throws {
        let chain = try VideoChain("invert=chroma=true", registry: registry)
        let buffer = patternBuffer(width: 37, height: 23, extraStride: 13)
        let before = (0..<3).map { planeBytes(buffer.frame, $0) }
        let out = try chain.process(buffer.frame)
        XCTAssertEqual(planeBytes(out, 0), before[0].map { 255 - $0 })
        for p in 1...2 {
            XCTAssertEqual(planeBytes(out, p), before[p].map { UInt8(min(255, 256 - Int($0))) })
            XCTAssertEqual(Set(paddingBytes(out, p)), [0xEE])
        }
        XCTAssertEqual(Set(paddingBytes(out, 0)), [0xEE])
    }

    func testOutOfPlaceFilterWritesItsOwnBufferAndKeepsTheInput() throws {
        let chain = try VideoChain("copy,invert", registry: registry)
        let buffer = patternBuffer(width: 33, height: 17, extraStride: 5)
        let before = planeBytes(buffer.frame, 0)
        var frame = buffer.frame
        frame.timestampMicroseconds = 123_456
        let out = try chain.process(frame)
        XCTAssertEqual(planeBytes(buffer.frame, 0), before, "an out-of-place first stage leaves the input alone")
        XCTAssertEqual(planeBytes(out, 0), before.map { 255 - $0 })
        XCTAssertEqual(out.timestampMicroseconds, 123_456)
        XCTAssertNotEqual(out.plane(0), buffer.frame.plane(0))
    }

    func testFormatChangeRenegotiates() throws {
        let chain = try VideoChain("copy", registry: registry)
        // A VideoFrame does not own its planes: keep each buffer alive while the chain reads it.
        let large = patternBuffer(width: 64, height: 48)
        let small = patternBuffer(width: 32, height: 16)
        _ = try withExtendedLifetime(large) { try chain.process(large.frame) }
        let out = try withExtendedLifetime(small) { try chain.process(small.frame) }
        XCTAssertEqual(out.format, VideoFormat(width: 32, height: 16))
        XCTAssertEqual(chain.inputFormat, VideoFormat(width: 32, height: 16))
    }

    // MARK: Allocations

    func testZeroAllocationsPerVideoFrameInSteadyState() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        let chain = try VideoChain("null,invert,copy,stamp=value=3,null", registry: registry)
        let buffer = patternBuffer(width: 64, height: 36, extraStride: 3)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        let before = rawfx_thread_allocation_count()
        for _ in 0..<200 { _ = try chain.process(buffer.frame) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
    }

    func testZeroAllocationsPerAudioChunkInSteadyState() throws {
        let chain = try AudioChain("gain=db=-6:block=480,gain=db=3", registry: PluginRegistry(environment: [:]))
        let format = AudioFormat(sampleRate: 48000, channels: 2)
        let samples = UnsafeMutablePointer<Int16>.allocate(capacity: 2 * 1000)
        defer { samples.deallocate() }
        samples.initialize(repeating: 1000, count: 2000)
        var emitted = 0
        let sizes = [441, 17, 960, 1, 600]
        for size in sizes { try chain.process(AudioBlock(samples: samples, frameCount: size, format: format)) { emitted += $0.frameCount } }
        let before = rawfx_thread_allocation_count()
        for _ in 0..<50 {
            // Index loop: iterating an Array allocates in unoptimized (debug) test code.
            for i in 0..<sizes.count {
                try chain.process(AudioBlock(samples: samples, frameCount: sizes[i], format: format)) { emitted += $0.frameCount }
            }
        }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
        XCTAssertEqual(emitted, 51 * sizes.reduce(0, +) / 480 * 480)
    }

    // MARK: Swapping chains while frames flow

    func testSwapBetweenFramesWhileFramesFlowFromAnotherThread() throws {
        // Each chain stamps twice: one kind +1 +1, the other +10 +10. A frame run half by each
        // would read +11. Every frame must be +2 or +20, none missing, and the result may only
        // change where the processing thread took a new chain (two quick replaces may install
        // the same kind again, so the swap count alone does not say which kind is in force).
        let chains = [try VideoChain("stamp=value=1,stamp=value=1", registry: registry),
                      try VideoChain("stamp=value=10,stamp=value=10", registry: registry)]
        let swappable = SwappableVideoChain(chains[0])
        let frames = 20_000
        let buffer = patternBuffer(width: 16, height: 16)
        // Written by the processing thread, read after it has finished.
        nonisolated(unsafe) let results = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: frames)
        nonisolated(unsafe) let swapsSeen = UnsafeMutableBufferPointer<Int>.allocate(capacity: frames)
        defer { results.deallocate(); swapsSeen.deallocate() }
        let done = DispatchSemaphore(value: 0)
        let stop = ManagedAtomicFlag()
        Thread {
            for i in 0..<frames {
                buffer.frame.plane(0)[0] = 0
                do {
                    let out = try swappable.process(buffer.frame)
                    results[i] = out.plane(0)[0]
                    swapsSeen[i] = swappable.swapCount
                } catch {
                    results[i] = 255
                }
            }
            stop.set()
            done.signal()
        }.start()
        var replacements = 0
        while !stop.isSet {
            try swappable.replace(with: VideoChain(specs: chains[(replacements + 1) % 2].specs, registry: registry))
            replacements += 1
            usleep(200)
        }
        done.wait()
        XCTAssertEqual(results.filter { $0 != 2 && $0 != 20 }.count, 0, "a frame ran through parts of two chains")
        XCTAssertGreaterThan(swappable.swapCount, 2, "the test should swap while frames flow")
        XCTAssertTrue(results.contains(2) && results.contains(20), "both chains ran frames")
        for i in 1..<frames where swapsSeen[i] == swapsSeen[i - 1] && results[i] != results[i - 1] {
            XCTFail("frame \(i) changed chains without a swap")
            break
        }
    }
}

/// A flag set by one thread and read by another.
final class ManagedAtomicFlag: @unchecked Sendable {
    private var value = false
    private let lock = NSLock()
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}

/// A frame handed out by a buffer keeps the buffer's planes alive (issue #10: a frame view
/// must not outlive its storage).
final class FrameStorageTests: XCTestCase {
    func testBufferFrameKeepsItsStorageAlive() {
        weak var weakBuffer: VideoBuffer?
        var frame: VideoFrame? = {
            let buffer = VideoBuffer(format: VideoFormat(width: 64, height: 48))
            weakBuffer = buffer
            return buffer.frame
        }()
        XCTAssertNotNil(weakBuffer, "the frame must retain its buffer")
        frame!.plane(0)[64 * 48 - 1] = 7
        frame!.plane(2)[32 * 24 - 1] = 9
        XCTAssertEqual(frame!.plane(0)[64 * 48 - 1], 7)
        frame = nil
        XCTAssertNil(weakBuffer, "the buffer must go with its last frame")
    }

    func testChainOutputOutlivesTheChain() throws {
        let registry = builtPlugins
        var chain: VideoChain? = try VideoChain("scale=width=32:height=24", registry: registry)
        let input = VideoBuffer(format: VideoFormat(width: 64, height: 48, colorRange: .full))
        input.fill(y: 200)
        _ = try chain!.negotiate(input.format)
        let output = try chain!.process(input.frame)
        chain = nil
        XCTAssertTrue(output.storage is VideoBuffer, "the output holds the scaler's buffer")
        XCTAssertEqual(output.width, 32)
        XCTAssertEqual(output.plane(0)[0], 200, "a flat picture stays flat through the scaler")
    }
}
