import Foundation
import RawFX
import RawFXSDK
import RawFXEmulator
import XCTest
@testable import RawFXTestSupport
#if canImport(Glibc)
import Glibc
#endif

// Shared helpers of the Processor*/Emulator* tests, and the processor facade's own tests.

/// A C plugin compiled once per test run, with filters that let a test hold a frame inside a
/// chain (`test_gate`, `test_gate_audio`), slow it down (`delay_ms`), and carry state across
/// blocks (`test_accum`). The gate and its counters are exported C functions, reached with
/// dlsym, so a test knows exactly when a frame is in the chain.
enum GatePlugin {
    static let source = #"""
    #define _POSIX_C_SOURCE 199309L
    #include <stdlib.h>
    #include <string.h>
    #include <time.h>
    #include "rawfx.h"

    static volatile int gate_closed = 0;
    static volatile int entered = 0;
    static volatile int exited = 0;

    RAWFX_EXPORT void test_gate_close(void) { __atomic_store_n(&gate_closed, 1, __ATOMIC_SEQ_CST); }
    RAWFX_EXPORT void test_gate_open(void) { __atomic_store_n(&gate_closed, 0, __ATOMIC_SEQ_CST); }
    RAWFX_EXPORT int test_gate_entered(void) { return __atomic_load_n(&entered, __ATOMIC_SEQ_CST); }
    RAWFX_EXPORT int test_gate_exited(void) { return __atomic_load_n(&exited, __ATOMIC_SEQ_CST); }

    static void pause_ms(int ms) {
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }

    typedef struct gate { rawfx_filter filter; int delay_ms; int add; int channels; int prev[8]; char error[64]; } gate;
    static gate *of(const rawfx_filter *f) { return (gate *)f->filter_data; }

    static const rawfx_param_descriptor video_params[] = {
        { sizeof(rawfx_param_descriptor), "delay_ms", "Delay", "Sleep per frame.", "ms",
          RAWFX_PARAM_INT, 0, 0.0, 0.0, 5000.0, NULL, NULL, 0 },
        { sizeof(rawfx_param_descriptor), "add", "Add", "Added to the first luma sample.", "",
          RAWFX_PARAM_INT, 0, 1.0, 0.0, 255.0, NULL, NULL, 0 },
    };
    static const rawfx_param_descriptor audio_params[] = {
        { sizeof(rawfx_param_descriptor), "delay_ms", "Delay", "Sleep per block.", "ms",
          RAWFX_PARAM_INT, 0, 0.0, 0.0, 5000.0, NULL, NULL, 0 },
    };

    static void destroy(const rawfx_filter *f) { free(of(f)); }
    static rawfx_status set_param(const rawfx_filter *f, uint32_t i, const rawfx_param_value *v) {
        if (i == 0) of(f)->delay_ms = (int)v->int_value; else of(f)->add = (int)v->int_value;
        return RAWFX_OK;
    }
    static rawfx_status configure(const rawfx_filter *f, const rawfx_format *in, rawfx_negotiation *r) {
        (void)r;
        if (in->kind == RAWFX_MEDIA_AUDIO) of(f)->channels = (int)in->audio.channels;
        return RAWFX_OK;
    }
    static void hold(const rawfx_filter *f) {
        __atomic_add_fetch(&entered, 1, __ATOMIC_SEQ_CST);
        if (of(f)->delay_ms > 0) pause_ms(of(f)->delay_ms);
        while (__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST)) pause_ms(1);
    }
    static rawfx_status process_video(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
        (void)in;
        hold(f);
        out->planes[0][0] = (uint8_t)(out->planes[0][0] + of(f)->add);
        __atomic_add_fetch(&exited, 1, __ATOMIC_SEQ_CST);
        return RAWFX_OK;
    }
    static rawfx_status process_audio(const rawfx_filter *f, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
        (void)in; (void)out;
        hold(f);
        __atomic_add_fetch(&exited, 1, __ATOMIC_SEQ_CST);
        return RAWFX_OK;
    }
    /* y[n] = (x[n] + y[n-1]) / 2 per channel: output depends on every earlier block. */
    static rawfx_status process_accum(const rawfx_filter *f, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
        gate *g = of(f);
        int c = g->channels;
        for (uint32_t i = 0; i < in->frame_count; i++)
            for (int ch = 0; ch < c; ch++) {
                int v = (out->samples[i * c + ch] + g->prev[ch]) / 2;
                out->samples[i * c + ch] = (int16_t)v;
                g->prev[ch] = v;
            }
        return RAWFX_OK;
    }
    static void reset(const rawfx_filter *f) { memset(of(f)->prev, 0, sizeof of(f)->prev); }
    static const char *get_error(const rawfx_filter *f) { return of(f)->error; }

    static const rawfx_filter *create(const rawfx_filter_descriptor *d, char *error, size_t capacity) {
        (void)error; (void)capacity;
        gate *g = calloc(1, sizeof *g);
        g->filter.struct_size = sizeof g->filter;
        g->filter.descriptor = d;
        g->filter.filter_data = g;
        g->filter.destroy = destroy;
        g->filter.set_param = set_param;
        g->filter.configure = configure;
        if (d->media_kind == RAWFX_MEDIA_VIDEO) g->filter.process_video = process_video;
        else if (strcmp(d->id, "test_accum") == 0) g->filter.process_audio = process_accum;
        else g->filter.process_audio = process_audio;
        g->filter.reset = reset;
        g->filter.get_error = get_error;
        g->add = 1;
        return &g->filter;
    }

    static const rawfx_filter_descriptor descriptors[] = {
        { sizeof(rawfx_filter_descriptor), "test_gate", "Gate", "1.0.0", "Holds frames while the gate is closed.",
          RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_IN_PLACE, video_params, 2, create },
        { sizeof(rawfx_filter_descriptor), "test_gate_audio", "Audio gate", "1.0.0", "Holds blocks while the gate is closed.",
          RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, audio_params, 1, create },
        { sizeof(rawfx_filter_descriptor), "test_accum", "Accumulator", "1.0.0", "A filter with memory.",
          RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, NULL, 0, create },
    };

    static rawfx_status init(const rawfx_host_info *host, char *error, size_t capacity) {
        (void)host; (void)error; (void)capacity;
        return RAWFX_OK;
    }
    static void deinit(void) {}
    static uint32_t count(void) { return 3; }
    static const rawfx_filter_descriptor *describe(uint32_t i) { return i < 3 ? &descriptors[i] : NULL; }
    static const rawfx_plugin_entry entry = {
        sizeof(rawfx_plugin_entry), RAWFX_ABI_VERSION_INIT, "test-gate", "1.0.0", init, deinit, count, describe
    };
    RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return &entry; }
    """#

    /// The compiled plugin's path (compiled on first use).
    static let path: String = {
        let directory = temporaryDirectory()
        let file = directory.appendingPathComponent("test_gate.c")
        try! source.write(to: file, atomically: true, encoding: .utf8)
        return try! compileCPlugin(file, into: directory, name: "libtestgate.so")
    }()

    nonisolated(unsafe) private static let handle: UnsafeMutableRawPointer = {
        guard let h = dlopen(path, RTLD_NOW) else { fatalError("dlopen \(path): \(String(cString: dlerror()))") }
        return h
    }()

    private static func function<T>(_ name: String, as type: T.Type) -> T {
        unsafeBitCast(dlsym(handle, name)!, to: type)
    }

    static func close() { function("test_gate_close", as: (@convention(c) () -> Void).self)() }
    static func open() { function("test_gate_open", as: (@convention(c) () -> Void).self)() }
    static var entered: Int { Int(function("test_gate_entered", as: (@convention(c) () -> Int32).self)()) }
    static var exited: Int { Int(function("test_gate_exited", as: (@convention(c) () -> Int32).self)()) }
}

/// The built plugins plus the gate plugin. A fresh registry per test keeps tests independent.
func processorRegistry() -> PluginRegistry {
    let registry = PluginRegistry(environment: [:])
    try! registry.load(path: GatePlugin.path)
    return registry
}

/// Polls `condition` until true or `timeout` seconds pass.
@discardableResult
func waitUntil(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return false }
        usleep(1000)
    }
    return true
}

/// Runs `body` on a new thread; `join` waits for it.
final class TestThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let thread: Thread

    init(_ body: @escaping @Sendable () -> Void) {
        let done = self.done
        thread = Thread {
            body()
            done.signal()
        }
        thread.start()
    }

    /// True if the thread finished within `timeout` seconds.
    @discardableResult
    func join(timeout: Double = 10) -> Bool { done.wait(timeout: .now() + timeout) == .success }

    var isFinished: Bool { thread.isFinished }
}

/// A thread-safe box for values a test collects from callbacks.
final class Collected<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ item: T) { lock.lock(); items.append(item); lock.unlock() }
    var all: [T] { lock.lock(); defer { lock.unlock() }; return items }
}

/// An I420 picture of one flat colour per plane (Y `y`, U `u`, V `v`).
func flatBuffer(width: Int, height: Int, y: UInt8, u: UInt8 = 128, v: UInt8 = 128, range: ColorRange = .limited) -> VideoBuffer {
    let buffer = VideoBuffer(format: VideoFormat(width: width, height: height, colorRange: range))
    buffer.fill(y: y, u: u, v: v)
    return buffer
}

// Push a buffer while keeping it alive: `VideoFrame` only borrows the buffer's planes, and
// a temporary `VideoBuffer` may be released as soon as its `.frame` is read.
extension VideoSourceAdapter {
    @discardableResult
    func push(_ buffer: VideoBuffer) -> PublishStatus { withExtendedLifetime(buffer) { pushFrame(buffer.frame) } }
}

extension ShareSourceAdapter {
    @discardableResult
    func push(_ buffer: VideoBuffer) -> PublishStatus { withExtendedLifetime(buffer) { pushFrame(buffer.frame) } }
}

extension ProductionStudioAdapter {
    @discardableResult
    func push(_ buffer: VideoBuffer) -> PublishStatus { withExtendedLifetime(buffer) { pushFrame(buffer.frame) } }
}

final class ProcessorTests: XCTestCase {
    func testProcessorBuildsEachHookAndReportsTheirMetrics() throws {
        let processor = RawFXProcessor(registry: processorRegistry())
        let pre = try processor.configurePreProcessor(chain: "test_gate=add=0")
        let speaker = try processor.configureVirtualSpeaker(chain: "test_accum") { _, _ in }
        let source = try processor.configureVideoSource(chain: "test_gate=add=0")
        let mic = try processor.configureVirtualMic(chain: "gain=db=0", pacing: .caller)
        _ = try processor.configureShareSource()
        _ = try processor.configureProductionStudio(capability: PSVideoSourceCapability(width: 640, height: 360))

        let emulator = SDKSessionEmulator()
        let picture = patternBuffer(width: 64, height: 48)
        let capture = emulator.makeCaptureFrame(format: picture.format)
        for _ in 0..<5 { emulator.deliverPreProcess(pre, picture: picture.frame, into: capture) }
        let pcm = [Int16](repeating: 100, count: 480)
        pcm.withUnsafeBufferPointer {
            emulator.deliverSpeakerAudio(speaker, stream: .mixed, samples: $0, format: AudioFormat(sampleRate: 48000, channels: 1),
                                         timeStampMilliseconds: 0)
        }
        XCTAssertTrue(source.pushFrame(picture.frame).isRefused)
        _ = pcm.withUnsafeBufferPointer { mic.pushAudio($0.baseAddress!, frameCount: 480, format: AudioFormat(sampleRate: 48000, channels: 1)) }

        let metrics = processor.metrics
        XCTAssertEqual(metrics.map(\.name), ["preProcessor", "virtualSpeaker", "videoSource", "virtualMic", "shareSource",
                                             "productionStudio.video", "productionStudio.audio"])
        XCTAssertEqual(metrics[0].hook.frames, 5)
        XCTAssertEqual(metrics[0].filters.map(\.name), ["test_gate"])
        XCTAssertEqual(metrics[0].filters[0].frames, 5)
        XCTAssertGreaterThan(metrics[0].hook.p99Nanoseconds, 0)
        XCTAssertEqual(metrics[1].hook.frames, 1)
        XCTAssertEqual(metrics[1].filters.map(\.name), ["mixed/test_accum"])
        XCTAssertEqual(metrics[2].refused, 1)
        XCTAssertEqual(metrics[3].refused, 1)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        processor.close()
    }

    func testBadChainsFailAtConfigureWithTheEngineMessage() {
        let processor = RawFXProcessor(registry: processorRegistry())
        XCTAssertThrowsChainError(try processor.configureVideoSource(chain: "nosuch=1")) {
            guard case .unknownFilter(let name, _) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(name, "nosuch")
        }
        XCTAssertThrowsChainError(try processor.configureVirtualSpeaker(chain: "test_gate") { _, _ in }) {
            guard case .wrongMediaKind = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsChainError(try processor.configureVirtualMic(targetRate: 44000)) {
            XCTAssertTrue($0.description.contains("44000"), $0.description)
        }
        XCTAssertThrowsChainError(try processor.configureProductionStudio(capability: PSVideoSourceCapability(width: 640, height: 360),
                                                                          audioRate: 44100)) {
            XCTAssertEqual($0.description, "production studio sends audio at 32000 or 48000 Hz only, not 44100")
        }
    }

    /// Looking for a hook and creating it are one step: before, two threads that configured the
    /// same hook at once could each create one, and the SDK kept one while the processor kept
    /// the other. Each round races two threads through `configureVideoSource`/`configureVirtualSpeaker`
    /// on a fresh processor (making a chain takes long enough that the old window was wide).
    func testConcurrentConfigureOfOneHookMakesOneHook() throws {
        let registry = processorRegistry()
        for _ in 0..<20 {
            let processor = RawFXProcessor(registry: registry)
            let sources = Locked<[ObjectIdentifier]>([])
            let speakers = Locked<[ObjectIdentifier]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                if let source = try? processor.configureVideoSource(chain: "test_gate=add=0") {
                    sources.withLock { $0.append(ObjectIdentifier(source)) }
                }
                if let speaker = try? processor.configureVirtualSpeaker(chain: "test_accum", sink: { _, _ in }) {
                    speakers.withLock { $0.append(ObjectIdentifier(speaker)) }
                }
            }
            let madeSources = sources.withLock { $0 }, madeSpeakers = speakers.withLock { $0 }
            XCTAssertEqual(madeSources.count, 2)
            XCTAssertEqual(Set(madeSources).count, 1, "two video sources were made")
            XCTAssertEqual(Set(madeSpeakers).count, 1, "two virtual speakers were made")
            XCTAssertEqual(processor.videoSource.map(ObjectIdentifier.init), madeSources.first)
            processor.close()
        }
    }

    /// A chain's `metrics` never waits for a filter and never mixes two frames: while frame 4
    /// is held in the second stage (the first has already recorded it), every stage reads 3.
    func testChainMetricsWhileAFrameIsHeldAreThePreviousFrameForEveryStage() throws {
        let registry = processorRegistry()
        guard let basics = builtPlugins.libraries.first(where: { $0.name == "rawfx-basics" }) else {
            throw XCTSkip("libRawFXBasics.so is not built next to the tests")
        }
        try registry.load(path: basics.path)
        let chain = try VideoChain("null,test_gate=add=0", registry: registry)
        let buffer = flatBuffer(width: 32, height: 18, y: 16)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        GatePlugin.close()
        defer { GatePlugin.open() }
        let entered = GatePlugin.entered
        let done = DispatchSemaphore(value: 0)
        let control = chain.control
        let owned = ProcessingThreadOwned(chain), frame = ProcessingThreadOwned(buffer)
        Thread.detachNewThread {
            _ = try? owned.value.process(frame.value.frame)
            done.signal()
        }
        XCTAssertTrue(waitUntil { GatePlugin.entered > entered }, "frame 4 never reached the gate")
        XCTAssertEqual(control.metrics.map(\.frames), [3, 3], "one frame's figures, read while the next is held")
        GatePlugin.open()
        done.wait()
        XCTAssertEqual(control.metrics.map(\.frames), [4, 4])
    }

    func testSDKUserKeysFromVideoSDKStringIDs() {
        XCTAssertEqual(SDKUser(userIDString: "16778240").userID, 16_778_240)
        XCTAssertEqual(SDKUser(userIDString: "abc"), SDKUser(userIDString: "abc"))
        XCTAssertNotEqual(SDKUser(userIDString: "abc"), SDKUser(userIDString: "abd"))
    }
}
