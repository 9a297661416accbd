import CLibYUV
import Foundation
import RawFX
import RawFXAllocCounter
import RawFXEmulator
@testable import RawFXSDK
import Synchronization
import XCTest
@testable import RawFXTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A stateful test filter, `blend`: luma becomes an exponential average of the frames so far,
/// out = (cur·(256−weight) + prev·weight + 128) >> 8 with prev the previous output (the first
/// frame after configure or reset passes unchanged). With `delay=1` it also holds each luma
/// result back one frame (latency 1), for drain tests. It counts live instances and records the
/// thread that destroyed the last one, so tests see where a chain is released.
let blendSource = #"""
#include "rawfx/plugin_helpers.h"
#include <pthread.h>
#include <stdlib.h>

RAWFX_EXPORT int blend_live = 0;
RAWFX_EXPORT unsigned long blend_destroy_thread = 0;

typedef struct blend {
    rawfx_instance_base base; int weight, delay, have, have_held; uint32_t w, h; uint8_t *prev, *held;
} blend;

static const rawfx_param_descriptor blend_params[] = {
    RAWFX_INT_PARAM("weight", "Weight", "Weight of the previous output, of 256.", "", 0, 128, 0, 256),
    RAWFX_INT_PARAM("delay", "Delay", "Frames of delay of the luma result.", "", RAWFX_PARAM_FLAG_RECONFIGURE, 0, 0, 1),
};

static blend *of(const rawfx_filter *f) { return (blend *)f->filter_data; }

static void destroy(const rawfx_filter *f) {
    blend *b = of(f);
    free(b->prev);
    free(b->held);
    rawfx_instance_free(&b->base);
    __atomic_sub_fetch(&blend_live, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&blend_destroy_thread, (unsigned long)pthread_self(), __ATOMIC_SEQ_CST);
}

static rawfx_status set_param(const rawfx_filter *f, uint32_t i, const rawfx_param_value *v) {
    rawfx_status s = rawfx_check_param(&of(f)->base, i, v);
    if (s == RAWFX_OK && i == 0) of(f)->weight = (int)v->int_value;
    if (s == RAWFX_OK && i == 1) of(f)->delay = (int)v->int_value;
    return s;
}

static rawfx_status configure(const rawfx_filter *f, const rawfx_format *in, rawfx_negotiation *r) {
    blend *b = of(f);
    rawfx_status s = rawfx_check_video_input(&b->base, in, 16384);
    if (s != RAWFX_OK) return s;
    free(b->prev);
    free(b->held);
    b->w = in->video.width;
    b->h = in->video.height;
    b->prev = malloc((size_t)b->w * b->h);
    b->held = malloc((size_t)b->w * b->h);
    b->have = b->have_held = 0;
    r->latency = (uint32_t)b->delay;
    return b->prev && b->held ? RAWFX_OK : rawfx_fail(&b->base, RAWFX_ERR_OUT_OF_MEMORY, "no memory");
}

static rawfx_status process(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
    blend *b = of(f);
    (void)out;
    for (uint32_t y = 0; y < b->h; y++) {
        uint8_t *row = in->planes[0] + (ptrdiff_t)y * in->strides[0];
        uint8_t *prev = b->prev + (size_t)y * b->w;
        for (uint32_t x = 0; x < b->w; x++) {
            int p = b->have ? prev[x] : row[x];
            row[x] = (uint8_t)((row[x] * (256 - b->weight) + p * b->weight + 128) >> 8);
            prev[x] = row[x];
            if (b->delay) {
                uint8_t *held = b->held + (size_t)y * b->w;
                uint8_t now = row[x];
                if (b->have_held) row[x] = held[x];
                held[x] = now;
            }
        }
    }
    b->have = 1;
    b->have_held = 1;
    return RAWFX_OK;
}

static void reset(const rawfx_filter *f) { of(f)->have = of(f)->have_held = 0; }

static const rawfx_filter functions = RAWFX_FILTER_FUNCTIONS(destroy, set_param, configure, process, NULL, reset, NULL, NULL);

static const rawfx_filter *create(const rawfx_filter_descriptor *d, const rawfx_host *host, char *error, size_t capacity) {
    blend *b = (blend *)rawfx_instance_new(sizeof *b, d, host, &functions, error, capacity);
    if (b == NULL) return NULL;
    __atomic_add_fetch(&blend_live, 1, __ATOMIC_SEQ_CST);
    return rawfx_instance_ready(&b->base, error, capacity);
}

static const rawfx_filter_descriptor blend_descriptor = RAWFX_FILTER_DESCRIPTOR(
    "blend", "Blend", "1.0.0", "Temporal average of luma (test filter).", RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_IN_PLACE,
    blend_params, create);

RAWFX_PLUGIN_ENTRY("receive-test", "1.0.0", &blend_descriptor)
"""#

/// The blend plugin, compiled once per test run, and a registry with it and the shipped YUV plugin.
enum ReceiveFixture {
    static let blendPath: String = {
        let dir = temporaryDirectory()
        let source = dir.appendingPathComponent("blend.c")
        try! blendSource.write(to: source, atomically: true, encoding: .utf8)
        return try! compileCPlugin(source, into: dir, name: "blend.so")
    }()

    static func registry() throws -> PluginRegistry {
        let registry = PluginRegistry.empty()
        guard let yuv = builtPlugins.libraries.first(where: { $0.name == "rawfx-yuv" }) else {
            throw XCTSkip("libRawFXYUV.so is not built next to the tests")
        }
        try registry.load(path: yuv.path)
        try registry.load(path: blendPath)
        return registry
    }

    /// A counter the blend plugin exports.
    static func symbol<T>(_ name: String, _ type: T.Type) -> UnsafeMutablePointer<T> {
        let handle = dlopen(blendPath, RTLD_NOW | RTLD_NOLOAD)!
        return dlsym(handle, name)!.assumingMemoryBound(to: T.self)
    }

    static var liveBlends: Int32 { symbol("blend_live", Int32.self).pointee }
    static var lastDestroyThread: UInt { symbol("blend_destroy_thread", UInt.self).pointee }
}

/// A picture copied out of a sink call (the frame is valid during the call only).
struct Received: Equatable {
    var id: ReceiveStreamID
    var format: VideoFormat
    var planes: [[UInt8]]
    var timestamp: Int64

    init(_ id: ReceiveStreamID, _ frame: VideoFrame) {
        self.id = id
        format = frame.format
        planes = (0..<3).map { planeBytes(frame, $0) }
        timestamp = frame.timestampMicroseconds
    }
}

/// Collects what a hook's sink gets; `gate` holds the sink back (async tests), `holding` only
/// the streams in it.
final class ReceivedFrames: @unchecked Sendable {
    let received = Locked<[Received]>([])
    let entered = Locked<[ReceiveStreamID: Int]>([:])
    let gate = Locked<Bool>(true)
    let holding = Locked<Set<ReceiveStreamID>>([])
    let threads = Locked<Set<UInt>>([])

    var sink: ReceiveVideoHook.Sink {
        { [self] id, frame in
            entered.withLock { $0[id, default: 0] += 1 }
            while !gate.withLock({ $0 }) || holding.withLock({ $0.contains(id) }) { usleep(200) }
            received.withLock { $0.append(Received(id, frame)) }
            threads.withLock { _ = $0.insert(UInt(pthread_self())) }
        }
    }

    func frames(of id: ReceiveStreamID) -> [Received] { received.withLock { $0.filter { $0.id == id } } }
    func enteredCount(_ id: ReceiveStreamID) -> Int { entered.withLock { $0[id] ?? 0 } }
}

/// A deterministic picture per (seed), at `format`.
func receivedPattern(_ format: VideoFormat, seed: Int) -> VideoBuffer {
    patternBuffer(width: format.width, height: format.height, range: format.colorRange, seed: seed)
}

/// One frame of `format` from `pipe`, with the picture of `seed` and timestamp `seed` ms.
@discardableResult
func deliverFrame(_ pipe: EmulatedVideoPipe, _ format: VideoFormat, seed: Int, rotation: SDKVideoRawDataRotation = .none,
                  memoryMode: RawDataMemoryMode = .heap, padding: Int = 16, ledger: ContractLedger) -> EmulatedVideoRawData {
    let raw = EmulatedVideoRawData(format: format, rotation: rotation, padding: padding,
                                   timeStampMilliseconds: UInt64(seed), memoryMode: memoryMode, ledger: ledger)
    raw.capture(receivedPattern(format, seed: seed).frame)
    pipe.deliver(raw)
    return raw
}

/// Runs `body` on a new thread and waits for it (an SDK delivery thread).
func onOtherThread(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    Thread { body(); done.signal() }.start()
    done.wait()
}

final class ReceiveVideoTests: XCTestCase {
    var registry: PluginRegistry!
    var ledger: ContractLedger!

    override func setUpWithError() throws {
        registry = try ReceiveFixture.registry()
        ledger = ContractLedger()
    }

    @discardableResult
    func deliver(_ pipe: EmulatedVideoPipe, _ format: VideoFormat, seed: Int, rotation: SDKVideoRawDataRotation = .none,
                 memoryMode: RawDataMemoryMode = .heap, padding: Int = 16) -> EmulatedVideoRawData {
        deliverFrame(pipe, format, seed: seed, rotation: rotation, memoryMode: memoryMode, padding: padding, ledger: ledger)
    }

    /// What a lone chain makes of `frames` (the reference for per-user state).
    func alone(_ chain: String, _ format: VideoFormat, seeds: [Int]) throws -> [[[UInt8]]] {
        let c = try VideoChain(chain, registry: registry)
        return try seeds.map { seed in
            let input = receivedPattern(format, seed: seed)
            return try withExtendedLifetime(input) {
                let out = try c.process(input.frame)
                return (0..<3).map { planeBytes(out, $0) }
            }
        }
    }

    // MARK: subscribe / unsubscribe

    func testSubscribeWithAutoIsRefusedAsTheSDKRefusesIt() throws {
        let pipe = EmulatedVideoPipe(user: SDKUser(1), ledger: ledger)
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, sink: recorder.sink)
        XCTAssertThrowsError(try hook.subscribe(pipe, user: SDKUser(1), resolution: .auto)) { error in
            XCTAssertEqual(error as? ReceiveSubscribeError, .refusedByPipe(ReceiveStreamID(user: SDKUser(1)), .invalidParameter))
            XCTAssertTrue("\(error)".contains("Errors_Invalid_Parameter") && "\(error)".contains("not Auto"), "\(error)")
        }
        XCTAssertEqual(pipe.subscriberCount, 0)
        XCTAssertTrue(hook.streams.isEmpty)
        XCTAssertEqual(deliver(pipe, VideoFormat(width: 64, height: 36), seed: 1).references, 0)
        XCTAssertEqual(pipe.undeliveredCount, 1, "no subscriber: nothing delivered")
        XCTAssertTrue(recorder.received.withLock { $0.isEmpty })
        // The same stream twice is refused by the hook, the pipe keeps one subscriber.
        try hook.subscribe(pipe, user: SDKUser(1), resolution: .p360)
        XCTAssertThrowsError(try hook.subscribe(pipe, user: SDKUser(1), resolution: .p360)) {
            XCTAssertEqual($0 as? ReceiveSubscribeError, .alreadySubscribed(ReceiveStreamID(user: SDKUser(1))))
        }
        XCTAssertEqual(pipe.subscriberCount, 1)
        XCTAssertEqual(pipe.resolution, .p360)
    }

    func testUnsubscribeStopsFramesAndReleasesTheChainOnTheUnsubscribingThread() throws {
        for mode in [ProcessingMode.sync, .async(capacity: 8)] {
            let before = ReceiveFixture.liveBlends
            let pipe = EmulatedVideoPipe(user: SDKUser(7), ledger: ledger)
            let recorder = ReceivedFrames()
            let hook = try ReceiveVideoHook(chain: "blend", registry: registry, mode: mode, sink: recorder.sink)
            try hook.subscribe(pipe, user: SDKUser(7), resolution: .p180)
            let format = VideoFormat(width: 64, height: 36)
            let ledger = self.ledger!
            onOtherThread { for seed in 0..<5 { deliverFrame(pipe, format, seed: seed, ledger: ledger) } }
            hook.waitUntilIdle()
            XCTAssertEqual(recorder.frames(of: ReceiveStreamID(user: SDKUser(7))).count, 5, "\(mode)")
            XCTAssertEqual(ReceiveFixture.liveBlends, before + 1, "one chain for the stream")
            XCTAssertTrue(hook.unsubscribe(user: SDKUser(7)))
            XCTAssertEqual(ReceiveFixture.liveBlends, before, "\(mode): the chain is destroyed by unsubscribe")
            XCTAssertEqual(ReceiveFixture.lastDestroyThread, UInt(pthread_self()), "\(mode): on the unsubscribing thread")
            XCTAssertEqual(pipe.subscriberCount, 0)
            XCTAssertEqual(pipe.deliver(EmulatedVideoRawData(format: format, ledger: ledger)), 0, "no delivery after unsubscribe")
            XCTAssertEqual(recorder.received.withLock { $0.count }, 5)
            XCTAssertFalse(hook.unsubscribe(user: SDKUser(7)), "already unsubscribed")
            XCTAssertEqual(hook.metrics.hook.frames, 5, "the hook's totals keep an unsubscribed stream's frames")
        }
        XCTAssertEqual(ledger.outstandingReferences, 0)
        XCTAssertEqual(ledger.violations, [])
    }

    func testUnsubscribeAndCloseReleaseQueuedFramesExactlyOnce() throws {
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, mode: .async(capacity: 8), sink: recorder.sink)
        let pipes = (1...2).map { EmulatedVideoPipe(user: SDKUser(UInt64($0)), ledger: ledger) }
        for pipe in pipes { try hook.subscribe(pipe, user: pipe.user, resolution: .p90) }
        let format = VideoFormat(width: 32, height: 18)
        let ids = pipes.map { ReceiveStreamID(user: $0.user) }
        recorder.holding.withLock { $0 = Set(ids) }
        for pipe in pipes {
            deliver(pipe, format, seed: 0)
            while recorder.enteredCount(ReceiveStreamID(user: pipe.user)) == 0 { usleep(100) }
            for seed in 1...3 { deliver(pipe, format, seed: seed) }
        }
        XCTAssertEqual(ledger.outstandingReferences, 8, "2 held by the workers, 6 queued")
        // Unsubscribing waits for the stream's worker, which is held: let it go from elsewhere.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { _ = recorder.holding.withLock { $0.remove(ids[0]) } }
        XCTAssertTrue(hook.unsubscribe(user: SDKUser(1)))
        XCTAssertEqual(recorder.frames(of: ids[0]).count, 1, "queued frames are not processed")
        XCTAssertEqual(hook.metrics.hook.drops, 3, "and are counted as drops")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { _ = recorder.holding.withLock { $0.remove(ids[1]) } }
        hook.close()
        XCTAssertEqual(recorder.frames(of: ids[1]).count, 1)
        XCTAssertEqual(hook.metrics.hook.drops, 6)
        XCTAssertEqual(ledger.addRefs, 8)
        XCTAssertEqual(ledger.releases, 8, "every reference released once, on every path")
        XCTAssertEqual(ledger.violations, [])
        XCTAssertThrowsError(try hook.subscribe(pipes[0], user: SDKUser(1), resolution: .p90)) {
            XCTAssertEqual($0 as? ReceiveSubscribeError, .closed)
        }
    }

    /// The emulator's ledger is what the other tests trust: it must catch a careless delegate.
    func testEmulatedPipeCatchesLateReadsAndUnbalancedReferences() throws {
        final class Careless: SDKRawDataPipeDelegate {
            var kept: [any VideoRawData] = []
            var retain = false
            func onRawDataFrameReceived(_ rawData: any VideoRawData) {
                if retain { rawData.addRef() }
                kept.append(rawData)
            }
            func onRawDataStatusChanged(_ userRawdataStatus: SDKUserRawdataStatus) {}
        }
        let careless = Careless()
        let pipe = EmulatedVideoPipe(user: SDKUser(1), ledger: ledger)
        XCTAssertEqual(pipe.subscribe(with: careless, resolution: .auto), .invalidParameter)
        XCTAssertEqual(pipe.subscribe(with: careless, resolution: .p180), .success)
        XCTAssertEqual(pipe.subscribe(with: careless, resolution: .p180), .wrongUsage, "the same delegate twice")
        let format = VideoFormat(width: 16, height: 8)
        let first = deliver(pipe, format, seed: 1)
        XCTAssertNil(careless.kept[0].yBuffer, "kept without addRef: unreadable after the callback")
        XCTAssertEqual(first.planes.frame.plane(0)[0], EmulatedVideoRawData.poison, "and poisoned")
        XCTAssertEqual(ledger.violations.count, 1)
        careless.retain = true
        let second = deliver(pipe, format, seed: 2)
        XCTAssertNotNil(careless.kept[1].yBuffer, "retained: readable")
        XCTAssertEqual(ledger.outstandingReferences, 1, "a leak shows")
        XCTAssertEqual(pipe.deliver(second), 0, "a frame still referenced is not delivered again")
        careless.kept[1].releaseRef()
        careless.kept[1].releaseRef()
        XCTAssertEqual(ledger.outstandingReferences, 0)
        XCTAssertEqual(ledger.violations.map(\.call), ["VideoRawData.yBuffer", "VideoRawData", "VideoRawData.releaseRef"])
        XCTAssertEqual(pipe.unSubscribe(with: careless), .success)
        XCTAssertEqual(pipe.unSubscribe(with: careless), .wrongUsage)
    }

    /// The receive-side example of docs/sdk-integration.md, compiled and run against the
    /// emulator (an app gets its pipes from the SDK's user object instead).
    func testWorkedExampleFromTheDocs() throws {
        let user = SDKUser(userIDString: "16778240")
        let ledger = ContractLedger()
        let videoPipe = EmulatedVideoPipe(user: user, kind: .video, ledger: ledger)  // user.getVideoPipe()
        let sharePipe = EmulatedVideoPipe(user: user, kind: .share, ledger: ledger)  // user.getSharePipe()
        let shown = Locked<[(ReceiveStreamID, Int, Int)]>([])

        // --- example ---
        let hook = try ReceiveVideoHook(chain: "rotate=angle=auto,scale=width=640:height=360:mode=fit",
                                        registry: builtPlugins, mode: .async(capacity: 3, workers: 2)) { stream, frame in
            // One of the pool's 2 threads; the frame is valid during this call only: draw or copy it now.
            shown.withLock { $0.append((stream, frame.width, frame.height)) }
        }
        try hook.subscribe(videoPipe, user: user, resolution: .p360)                 // not .auto
        try hook.subscribe(sharePipe, user: user, kind: .share, resolution: .p720)
        try hook.setParameter("scale.mode", "fill")    // any thread: every user's chain, next frame
        // … frames arrive on onRawDataFrameReceived / onPixelBuffer …
        // --- end of example ---

        let portrait = EmulatedVideoRawData(format: VideoFormat(width: 360, height: 640), rotation: .rotation90, ledger: ledger)
        videoPipe.deliver(portrait)
        let screen = EmulatedNV12PixelBuffer(width: 1280, height: 720, ledger: ledger)
        sharePipe.deliverNV12(screen)
        hook.waitUntilIdle()
        let frames = shown.withLock { $0 }
        // Each stream's frame once; the two streams run on different workers, in either order.
        XCTAssertEqual(frames.count, 2)
        XCTAssertEqual(Set(frames.map(\.0)), [ReceiveStreamID(user: user, pipe: .video), ReceiveStreamID(user: user, pipe: .share)])
        XCTAssertTrue(frames.allSatisfy { $0.1 == 640 && $0.2 == 360 })

        // --- example, continued ---
        hook.unsubscribe(user: user, kind: .share)     // releases that stream's chain on this thread
        print(hook.metrics)                            // frames, drops, errors, p50/p99, per filter
        hook.close()                                   // unsubscribes the rest
        // --- end ---
        XCTAssertEqual(hook.metrics.hook.frames, 2)
        XCTAssertEqual(ledger.outstandingReferences, 0)
        XCTAssertEqual(ledger.violations, [])
    }

    // MARK: onRawDataFrameReceived

    func testSyncFrameRunsTheChainInsideTheCallbackOnTheSDKsPlanes() throws {
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, sink: recorder.sink)
        let pipe = EmulatedVideoPipe(user: SDKUser(3), ledger: ledger)
        try hook.subscribe(pipe, user: SDKUser(3), resolution: .p360)
        let format = VideoFormat(width: 66, height: 38, colorRange: .full)
        let raw = deliver(pipe, format, seed: 4, padding: 24)
        XCTAssertTrue(raw.paddingIntact)
        let got = try XCTUnwrap(recorder.received.withLock { $0.first })
        XCTAssertEqual(got.id, ReceiveStreamID(user: SDKUser(3), pipe: .video))
        XCTAssertEqual(got.format, format)
        XCTAssertEqual(got.timestamp, 4000, "GetTimeStamp's milliseconds become microseconds")
        // libyuv I420Mirror called here on the same picture.
        let input = receivedPattern(format, seed: 4)
        let expected = VideoBuffer(format: format)
        let e = expected.frame, i = input.frame
        XCTAssertEqual(I420Mirror(i.plane(0), Int32(i.stride(0)), i.plane(1), Int32(i.stride(1)), i.plane(2), Int32(i.stride(2)),
                                  e.plane(0), Int32(e.stride(0)), e.plane(1), Int32(e.stride(1)), e.plane(2), Int32(e.stride(2)),
                                  66, 38), 0)
        XCTAssertEqual(got.planes, (0..<3).map { planeBytes(e, $0) })
        XCTAssertEqual(recorder.threads.withLock { $0 }, [UInt(pthread_self())], "sync: the sink runs on the SDK's thread")
        XCTAssertEqual(ledger.addRefs, 0, "sync mode does not retain")
        XCTAssertEqual(ledger.violations, [])
        let m = try XCTUnwrap(hook.metrics(for: ReceiveStreamID(user: SDKUser(3))))
        XCTAssertEqual(m.hook.frames, 1)
        XCTAssertEqual(m.filters.map(\.name), ["mirror"])
    }

    func testAsyncRetainsEachFrameAndReleasesItExactlyOnce() throws {
        for memoryMode in [RawDataMemoryMode.heap, .stack] {
            let recorder = ReceivedFrames()
            let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, mode: .async(capacity: 16), sink: recorder.sink)
            let pipe = EmulatedVideoPipe(user: SDKUser(5), ledger: ledger)
            try hook.subscribe(pipe, user: SDKUser(5), resolution: .p360)
            let format = VideoFormat(width: 64, height: 36)
            ledger.reset()
            for seed in 0..<10 { deliver(pipe, format, seed: seed, memoryMode: memoryMode) }
            hook.waitUntilIdle()
            let got = recorder.frames(of: ReceiveStreamID(user: SDKUser(5)))
            XCTAssertEqual(got.map(\.timestamp), (0..<10).map { Int64($0) * 1000 }, "\(memoryMode): in order, none lost")
            XCTAssertEqual(got.map(\.planes), try alone("mirror", format, seeds: Array(0..<10)).map { $0 },
                           "\(memoryMode): the pictures, read while valid")
            XCTAssertEqual(ledger.addRefs, memoryMode == .heap ? 10 : 0, "heap: retained; stack: copied")
            XCTAssertEqual(ledger.outstandingReferences, 0, "every addRef released")
            XCTAssertEqual(ledger.violations, [], "\(memoryMode)")
            XCTAssertFalse(recorder.threads.withLock { $0 }.contains(UInt(pthread_self())), "async: a worker runs the chain")
            hook.close()
        }
    }

    // MARK: onRawDataStatusChanged

    /// User 2 subscribed with `chain`, three frames (seeds 0, 1, 2) processed, then `.off`.
    func threeFramesThenOff(_ chain: String, _ format: VideoFormat, _ mode: ProcessingMode) throws
        -> (ReceiveVideoHook, EmulatedVideoPipe, ReceivedFrames, ReceiveStreamID) {
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: chain, registry: registry, mode: mode, sink: recorder.sink)
        let pipe = EmulatedVideoPipe(user: SDKUser(2), ledger: ledger)
        try hook.subscribe(pipe, user: SDKUser(2), resolution: .p90, format: format)
        for seed in 0..<3 { deliver(pipe, format, seed: seed) }
        hook.waitUntilIdle()
        pipe.setStatus(.off)
        hook.waitUntilIdle()
        return (hook, pipe, recorder, ReceiveStreamID(user: SDKUser(2)))
    }

    func testStatusOffFlushesAndResetsTheUsersChainAndOnResumes() throws {
        let format = VideoFormat(width: 32, height: 18)
        for mode in [ProcessingMode.sync, .async(capacity: 8)] {
            let (hook, pipe, recorder, id) = try threeFramesThenOff("blend", format, mode)
            XCTAssertEqual(hook.status(of: id), .off)
            pipe.setStatus(.on)
            XCTAssertEqual(hook.status(of: id), .on)
            for seed in 3..<5 { deliver(pipe, format, seed: seed) }
            hook.waitUntilIdle()
            let got = recorder.frames(of: id).map(\.planes)
            // Before off: one history; after: a fresh one (reset), as a new chain would give.
            let expected = try alone("blend", format, seeds: [0, 1, 2]) + alone("blend", format, seeds: [3, 4])
            XCTAssertEqual(got, expected, "\(mode)")
            XCTAssertNotEqual(got.last, try alone("blend", format, seeds: [0, 1, 2, 3, 4]).last, "the reset is visible")
            hook.close()
        }
        XCTAssertEqual(ledger.outstandingReferences, 0)
        XCTAssertEqual(ledger.violations, [])
    }

    func testStatusOffDrainsADelayingChainBeforeTheReset() throws {
        let format = VideoFormat(width: 16, height: 8)
        for mode in [ProcessingMode.sync, .async(capacity: 8)] {
            let (hook, pipe, recorder, id) = try threeFramesThenOff("blend=delay=1", format, mode)
            // Reference: the engine's drain of a lone chain, repeating the last input.
            let chain = try VideoChain("blend=delay=1", registry: registry)
            XCTAssertEqual(try chain.negotiate(format), format)
            XCTAssertEqual(chain.latency, 1)
            var expected: [[[UInt8]]] = []
            let inputs = (0..<3).map { receivedPattern(format, seed: $0) }
            for input in inputs {
                let out = try chain.process(input.frame)
                expected.append((0..<3).map { planeBytes(out, $0) })
            }
            // The hook drains with the input as received (an in-place chain edited inputs[2]).
            try chain.drain(repeating: receivedPattern(format, seed: 2).frame) { out in expected.append((0..<3).map { planeBytes(out, $0) }) }
            XCTAssertEqual(expected.count, 4)
            XCTAssertEqual(recorder.frames(of: id).map(\.planes), expected, "\(mode): the held frame reaches the sink at off")
            pipe.setStatus(.off)
            hook.waitUntilIdle()
            XCTAssertEqual(recorder.frames(of: id).count, 4, "\(mode): a second off has nothing to drain")
            hook.close()
        }
    }

    /// Async: the SDK's callback never waits for a worker. With the only worker held inside
    /// the chain's sink, a burst of frames (more than the queue holds: the oldest are dropped)
    /// is delivered on another thread, which must finish while the worker is still held.
    func testAsyncDeliveriesNeverWaitForABusyWorker() throws {
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, mode: .async(capacity: 4, workers: 1),
                                        sink: recorder.sink)
        let pipe = EmulatedVideoPipe(user: SDKUser(11), ledger: ledger)
        let id = ReceiveStreamID(user: SDKUser(11))
        try hook.subscribe(pipe, user: SDKUser(11), resolution: .p90)
        let format = VideoFormat(width: 32, height: 18)
        recorder.gate.withLock { $0 = false }
        deliver(pipe, format, seed: 0)
        while recorder.enteredCount(id) == 0 { usleep(100) }   // the worker holds frame 0
        let delivered = DispatchSemaphore(value: 0)
        let ledger: ContractLedger = self.ledger
        Thread.detachNewThread {
            for seed in 1...20 { _ = deliverFrame(pipe, format, seed: seed, memoryMode: .heap, padding: 16, ledger: ledger) }
            delivered.signal()
        }
        let outcome = delivered.wait(timeout: .now() + 20)
        recorder.gate.withLock { $0 = true }
        XCTAssertEqual(outcome, .success, "a delivery waited for the held worker")
        if outcome != .success { _ = delivered.wait(timeout: .now() + 20) }
        hook.waitUntilIdle()
        XCTAssertEqual(hook.metrics(for: id)?.hook.drops, 16, "20 frames into a queue of 4: the 16 oldest dropped")
        hook.close()
        XCTAssertEqual(self.ledger.outstandingReferences, 0)
    }

    func testStatusOffDiscardsQueuedFramesAndReleasesThem() throws {
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, mode: .async(capacity: 8), sink: recorder.sink)
        let pipe = EmulatedVideoPipe(user: SDKUser(9), ledger: ledger)
        let id = ReceiveStreamID(user: SDKUser(9))
        try hook.subscribe(pipe, user: SDKUser(9), resolution: .p90)
        let format = VideoFormat(width: 32, height: 18)
        recorder.gate.withLock { $0 = false }
        deliver(pipe, format, seed: 0)
        while recorder.enteredCount(id) == 0 { usleep(100) }   // the worker holds frame 0
        for seed in 1...4 { deliver(pipe, format, seed: seed) }
        XCTAssertEqual(ledger.outstandingReferences, 5)
        pipe.setStatus(.off)
        XCTAssertEqual(ledger.outstandingReferences, 1, "the 4 queued frames are released at off")
        recorder.gate.withLock { $0 = true }
        hook.waitUntilIdle()
        XCTAssertEqual(recorder.frames(of: id).map(\.timestamp), [0])
        XCTAssertEqual(hook.metrics(for: id)?.hook.drops, 4)
        hook.close()
        XCTAssertEqual(ledger.outstandingReferences, 0)
        XCTAssertEqual(ledger.violations, [])
    }

    // MARK: share pipe, per-user state, rotation

    func testShareFramesArriveThroughTheSameCallbackOnTheSharePipe() throws {
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: "blend", registry: registry, sink: recorder.sink)
        let video = EmulatedVideoPipe(user: SDKUser(4), kind: .video, ledger: ledger)
        let share = EmulatedVideoPipe(user: SDKUser(4), kind: .share, ledger: ledger)
        try hook.subscribe(video, user: SDKUser(4), kind: .video, resolution: .p360)
        try hook.subscribe(share, user: SDKUser(4), kind: .share, resolution: .p720)
        let camera = VideoFormat(width: 32, height: 18), screen = VideoFormat(width: 48, height: 30)
        deliver(video, camera, seed: 1)
        deliver(share, screen, seed: 2)
        deliver(video, camera, seed: 3)
        deliver(share, screen, seed: 4)
        let videoID = ReceiveStreamID(user: SDKUser(4), pipe: .video), shareID = ReceiveStreamID(user: SDKUser(4), pipe: .share)
        XCTAssertEqual(Set(hook.streams), [videoID, shareID])
        XCTAssertEqual(recorder.frames(of: videoID).map(\.planes), try alone("blend", camera, seeds: [1, 3]))
        XCTAssertEqual(recorder.frames(of: shareID).map(\.planes), try alone("blend", screen, seeds: [2, 4]))
        XCTAssertEqual(recorder.frames(of: shareID).map(\.format), [screen, screen])
    }

    func testEachUserGetsTheChainRunOnTheirOwnFramesAlone() throws {
        let format = VideoFormat(width: 40, height: 24)
        for mode in [ProcessingMode.sync, .async(capacity: 32)] {
            let recorder = ReceivedFrames()
            let hook = try ReceiveVideoHook(chain: "blend=weight=200", registry: registry, mode: mode, sink: recorder.sink)
            let pipes = (1...3).map { EmulatedVideoPipe(user: SDKUser(UInt64($0)), ledger: ledger) }
            for pipe in pipes { try hook.subscribe(pipe, user: pipe.user, resolution: .p360) }
            // Interleaved: user 1 gets seeds 0,3,6,..., user 2 gets 1,4,7,...
            for seed in 0..<12 { deliver(pipes[seed % 3], format, seed: seed) }
            hook.waitUntilIdle()
            for (index, pipe) in pipes.enumerated() {
                let seeds = Array(stride(from: index, to: 12, by: 3))
                XCTAssertEqual(recorder.frames(of: ReceiveStreamID(user: pipe.user)).map(\.planes),
                               try alone("blend=weight=200", format, seeds: seeds), "\(mode) \(pipe.user)")
            }
            hook.close()
        }
    }

    func testRotateAutoUprightsByTheFramesRotationLikeI420Rotate() throws {
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: "rotate=angle=auto", registry: registry, sink: recorder.sink)
        let pipe = EmulatedVideoPipe(user: SDKUser(8), ledger: ledger)
        let id = ReceiveStreamID(user: SDKUser(8))
        try hook.subscribe(pipe, user: SDKUser(8), resolution: .p360, format: VideoFormat(width: 64, height: 36))
        let format = VideoFormat(width: 64, height: 36)
        let turns: [(SDKVideoRawDataRotation, RotationMode)] = [(.rotation90, kRotate90), (.rotation270, kRotate270),
                                                                (.rotation180, kRotate180), (.none, kRotate0)]
        for (seed, turn) in turns.enumerated() { deliver(pipe, format, seed: seed, rotation: turn.0) }
        let got = recorder.frames(of: id)
        XCTAssertEqual(got.count, 4)
        for (seed, turn) in turns.enumerated() {
            let input = receivedPattern(format, seed: seed).frame
            let quarter = turn.0 == .rotation90 || turn.0 == .rotation270
            let out = VideoBuffer(format: VideoFormat(width: quarter ? 36 : 64, height: quarter ? 64 : 36))
            let o = out.frame
            XCTAssertEqual(I420Rotate(input.plane(0), Int32(input.stride(0)), input.plane(1), Int32(input.stride(1)),
                                      input.plane(2), Int32(input.stride(2)), o.plane(0), Int32(o.stride(0)),
                                      o.plane(1), Int32(o.stride(1)), o.plane(2), Int32(o.stride(2)), 64, 36, turn.1), 0)
            XCTAssertEqual(got[seed].planes, (0..<3).map { planeBytes(o, $0) }, "\(turn.0)")
            XCTAssertEqual(got[seed].format.rotation, 0, "upright: metadata 0")
        }
        // 0 -> 90 -> 270 -> 180 -> 0: every frame's format differed from the previous one.
        XCTAssertEqual(hook.renegotiations(of: id), 4)
        XCTAssertEqual(hook.metrics(for: id)?.hook.errors, 0)
    }

    // MARK: 8 users, async, capacity

    func testEightUsers360pAsyncAtCapacityDropNothingAboveDropTheOldestAndLeakNoReference() throws {
        let capacity = 3
        let format = VideoFormat(width: 640, height: 360)
        let ledger = self.ledger!
        let recorder = ReceivedFrames()
        // Eight workers: the rounds hold every user's worker in the sink at once.
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, mode: .async(capacity: capacity, workers: 8),
                                        sink: recorder.sink)
        let pipes = (1...8).map { EmulatedVideoPipe(user: SDKUser(UInt64($0)), ledger: ledger) }
        for pipe in pipes { try hook.subscribe(pipe, user: pipe.user, resolution: .p360) }
        let picture = receivedPattern(format, seed: 1)

        /// Each worker takes one frame and is held in the sink; then `extra` more frames per
        /// user arrive while it is held.
        func round(first: Int, extra: Int) -> [[Int64]] {
            recorder.received.withLock { $0.removeAll() }
            recorder.entered.withLock { $0.removeAll() }
            recorder.gate.withLock { $0 = false }
            for pipe in pipes {
                let raw = EmulatedVideoRawData(format: format, timeStampMilliseconds: UInt64(first), ledger: ledger)
                raw.capture(picture.frame)
                pipe.deliver(raw)
            }
            for pipe in pipes { while recorder.enteredCount(ReceiveStreamID(user: pipe.user)) == 0 { usleep(100) } }
            DispatchQueue.concurrentPerform(iterations: pipes.count) { index in
                for n in 1...extra {
                    let raw = EmulatedVideoRawData(format: format, timeStampMilliseconds: UInt64(first + n), ledger: ledger)
                    raw.capture(picture.frame)
                    pipes[index].deliver(raw)
                }
            }
            recorder.gate.withLock { $0 = true }
            hook.waitUntilIdle()
            return pipes.map { pipe in recorder.frames(of: ReceiveStreamID(user: pipe.user)).map { $0.timestamp / 1000 } }
        }

        // At capacity: 1 held + `capacity` queued per user, nothing dropped.
        let atCapacity = round(first: 0, extra: capacity)
        for timestamps in atCapacity { XCTAssertEqual(timestamps, [0, 1, 2, 3]) }
        XCTAssertEqual(hook.metrics.hook.drops, 0)
        XCTAssertEqual(hook.metrics.hook.frames, UInt64(8 * (capacity + 1)))
        XCTAssertEqual(ledger.outstandingReferences, 0)

        // Above: 1 held + 7 more per user into 3 slots: the 4 oldest waiting are dropped.
        let above = round(first: 100, extra: 7)
        for timestamps in above { XCTAssertEqual(timestamps, [100, 105, 106, 107], "the newest kept, in order") }
        XCTAssertEqual(hook.metrics.hook.drops, 8 * 4)
        for pipe in pipes { XCTAssertEqual(hook.metrics(for: ReceiveStreamID(user: pipe.user))?.hook.drops, 4) }
        hook.close()
        XCTAssertEqual(ledger.addRefs, 8 * (capacity + 1) + 8 * 8, "every frame was retained (heap memory)")
        XCTAssertEqual(ledger.releases, ledger.addRefs, "and released exactly once")
        XCTAssertEqual(ledger.violations, [])
    }

    // MARK: run-time control while frames flow

    func testSetChainAndSetParameterWhileFramesFlowLoseNoCallback() throws {
        let format = VideoFormat(width: 32, height: 18)
        let ledger = self.ledger!
        for mode in [ProcessingMode.sync, .async(capacity: 1000)] {
            let recorder = ReceivedFrames()
            let hook = try ReceiveVideoHook(chain: "blend", registry: registry, mode: mode, sink: recorder.sink)
            let pipes = (1...4).map { EmulatedVideoPipe(user: SDKUser(UInt64($0)), ledger: ledger) }
            for pipe in pipes { try hook.subscribe(pipe, user: pipe.user, resolution: .p90, format: format) }
            let frames = 300
            let running = Atomic<Int>(pipes.count)
            let controlErrors = Locked<[String]>([])
            let control = Thread {
                var i = 0
                while running.load(ordering: .relaxed) > 0 {
                    do {
                        switch i % 4 {
                        case 0: try hook.setParameter(stage: "blend", name: "weight", value: String(i % 256))
                        case 1: try hook.setChain(i % 8 == 1 ? "blend,mirror" : "blend")
                        case 2: try hook.setBypass("blend", i % 8 == 2)
                        default: try hook.setParameter("0.weight", "64")
                        }
                    } catch {
                        controlErrors.withLock { $0.append("\(error)") }
                    }
                    i += 1
                    usleep(50)
                }
            }
            control.start()
            DispatchQueue.concurrentPerform(iterations: pipes.count) { index in
                for seed in 0..<frames { deliverFrame(pipes[index], format, seed: seed, ledger: ledger) }
                running.subtract(1, ordering: .relaxed)
            }
            hook.waitUntilIdle()
            XCTAssertEqual(controlErrors.withLock { $0 }, [], "\(mode)")
            for pipe in pipes {
                let id = ReceiveStreamID(user: pipe.user)
                XCTAssertEqual(recorder.frames(of: id).count, frames, "\(mode) \(pipe.user): every callback reached the sink")
                XCTAssertEqual(hook.metrics(for: id)?.hook.frames, UInt64(frames), "metrics survive the swaps")
                XCTAssertEqual(hook.metrics(for: id)?.hook.errors, 0)
            }
            hook.close()
        }
        XCTAssertEqual(ledger.outstandingReferences, 0)
        XCTAssertEqual(ledger.violations, [])
    }

    func testSetParameterKeepsEachUsersStateAndReachesLaterSubscribers() throws {
        let format = VideoFormat(width: 16, height: 8)
        let recorder = ReceivedFrames()
        let hook = try ReceiveVideoHook(chain: "blend", registry: registry, sink: recorder.sink)
        let first = EmulatedVideoPipe(user: SDKUser(1), ledger: ledger)
        try hook.subscribe(first, user: SDKUser(1), resolution: .p90, format: format)
        deliver(first, format, seed: 0)
        deliver(first, format, seed: 1)
        try hook.setParameter("blend.weight", "32")
        deliver(first, format, seed: 2)
        // Reference: one instance whose weight changed at frame 2, history kept.
        let chain = try VideoChain("blend", registry: registry)
        var expected: [[[UInt8]]] = []
        for seed in 0..<3 {
            if seed == 2 { try chain.control.setParameter("blend.weight", "32") }
            let input = receivedPattern(format, seed: seed)
            expected.append(try withExtendedLifetime(input) { let o = try chain.process(input.frame); return (0..<3).map { planeBytes(o, $0) } })
        }
        XCTAssertEqual(recorder.frames(of: ReceiveStreamID(user: SDKUser(1))).map(\.planes), expected)
        // A user subscribed after the change runs with weight 32 too.
        let second = EmulatedVideoPipe(user: SDKUser(2), ledger: ledger)
        try hook.subscribe(second, user: SDKUser(2), resolution: .p90, format: format)
        deliver(second, format, seed: 5)
        deliver(second, format, seed: 6)
        XCTAssertEqual(recorder.frames(of: ReceiveStreamID(user: SDKUser(2))).map(\.planes),
                       try alone("blend=weight=32", format, seeds: [5, 6]))
        XCTAssertThrowsChainError(try hook.setParameter("blend.weight", "999")) { error in
            XCTAssertTrue("\(error)".contains("256"), "\(error)")
        }
        XCTAssertThrowsChainError(try hook.setChain("nosuchfilter")) { _ in }
    }

    // MARK: allocation

    func testNoAllocationPerFrameInSyncMode() throws {
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, sink: { _, _ in })
        let pipe = EmulatedVideoPipe(user: SDKUser(1), ledger: ledger)
        try hook.subscribe(pipe, user: SDKUser(1), resolution: .p360)
        let raw = EmulatedVideoRawData(format: VideoFormat(width: 640, height: 360), ledger: ledger)
        raw.capture(receivedPattern(VideoFormat(width: 640, height: 360), seed: 1).frame)
        pipe.deliver(raw)
        pipe.deliver(raw)
        let before = rawfx_thread_allocation_count()
        for _ in 0..<50 { pipe.deliver(raw) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "sync: no allocation per frame")
        XCTAssertEqual(hook.metrics(for: ReceiveStreamID(user: SDKUser(1)))?.hook.frames, 52)
    }

    func testNoAllocationPerFrameInAsyncModeOnceWarm() throws {
        final class WorkerCounts: @unchecked Sendable {
            // Written by the worker only, read after waitUntilIdle.
            var counts = [UInt64](repeating: 0, count: 256)
            let n = Atomic<Int>(0)
        }
        let worker = WorkerCounts()
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, mode: .async(capacity: 4)) { _, _ in
            let i = worker.n.load(ordering: .relaxed)
            if i < worker.counts.count { worker.counts[i] = rawfx_thread_allocation_count() }
            worker.n.store(i + 1, ordering: .releasing)
        }
        let pipe = EmulatedVideoPipe(user: SDKUser(1), ledger: ledger)
        try hook.subscribe(pipe, user: SDKUser(1), resolution: .p360)
        let format = VideoFormat(width: 640, height: 360)
        let pool = (0..<2).map { _ in EmulatedVideoRawData(format: format, ledger: ledger) }
        for raw in pool { raw.capture(receivedPattern(format, seed: 2).frame) }
        var callbackAllocations: UInt64 = 0
        for i in 0..<120 {
            let raw = pool[i % pool.count]
            let before = rawfx_thread_allocation_count()
            pipe.deliver(raw)
            if i >= 20 { callbackAllocations += rawfx_thread_allocation_count() - before }
            // One frame at a time, so none is dropped and the worker processes all 120 (and
            // its slot is back in the free list, so the queue never needs a second one).
            hook.waitUntilIdle()
            XCTAssertTrue(raw.isReusable)
        }
        hook.waitUntilIdle()
        XCTAssertEqual(callbackAllocations, 0, "the SDK's thread allocates nothing per frame once warm")
        let processed = worker.n.load(ordering: .acquiring)
        XCTAssertEqual(processed, 120)
        let steady = worker.counts[30..<min(processed, worker.counts.count)]
        XCTAssertEqual(steady.last! - steady.first!, 0, "the worker allocates nothing per frame once warm")
        hook.close()
        XCTAssertEqual(ledger.outstandingReferences, 0)
    }
}
