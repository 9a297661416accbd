import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXEmulator
import XCTest
@testable import RawFXTestSupport

final class ProcessorPreProcessorTests: XCTestCase {
    func testInPlaceChainEditsTheSDKPlanesAndLeavesPaddingAlone() throws {
        let hook = try PreProcessorHook(chain: "test_gate=add=5", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let picture = patternBuffer(width: 66, height: 38, seed: 3)
        let capture = emulator.makeCaptureFrame(format: picture.format, padding: 24)
        XCTAssertNotEqual(capture.yStride, capture.width)
        let out = emulator.deliverPreProcess(hook, picture: picture.frame, into: capture)
        var expected = planeBytes(picture.frame, 0)
        expected[0] &+= 5
        XCTAssertEqual(planeBytes(out, 0), expected)
        XCTAssertEqual(planeBytes(out, 1), planeBytes(picture.frame, 1))
        XCTAssertEqual(planeBytes(out, 2), planeBytes(picture.frame, 2))
        XCTAssertTrue(capture.paddingIntact)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        XCTAssertEqual(hook.metrics.hook.frames, 1)
        XCTAssertEqual(hook.metrics.hook.errors, 0)
    }

    func testOutOfPlaceChainThatKeepsTheSizeIsCopiedBackIntoTheSDKPlanes() throws {
        // copy writes its own buffer; the in-place gate after it edits that buffer: the
        // result must land in the SDK's planes, row by row, through their strides.
        let hook = try PreProcessorHook(chain: "copy,test_gate=add=9", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let picture = patternBuffer(width: 40, height: 30, seed: 5)
        let capture = emulator.makeCaptureFrame(format: picture.format, padding: 13)
        let out = emulator.deliverPreProcess(hook, picture: picture.frame, into: capture)
        var expected = planeBytes(picture.frame, 0)
        expected[0] &+= 9
        XCTAssertEqual(planeBytes(out, 0), expected)
        XCTAssertEqual(planeBytes(out, 2), planeBytes(picture.frame, 2))
        XCTAssertTrue(capture.paddingIntact)
        XCTAssertEqual(hook.metrics.filters.map(\.name), ["copy", "test_gate"])
    }

    func testMirrorOutOfPlaceKeepsSizeAndIsCopiedBack() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("mirror", in: registry), "the YUV plugin (mirror) is not built yet")
        let hook = try PreProcessorHook(chain: "mirror", registry: registry)
        let emulator = SDKSessionEmulator()
        let picture = patternBuffer(width: 32, height: 16, seed: 1)
        let capture = emulator.makeCaptureFrame(format: picture.format)
        let out = emulator.deliverPreProcess(hook, picture: picture.frame, into: capture)
        for p in 0..<3 {
            let (w, h) = picture.frame.planeSize(p)
            let src = planeBytes(picture.frame, p)
            var flipped = [UInt8](repeating: 0, count: w * h)
            for y in 0..<h { for x in 0..<w { flipped[y * w + x] = src[y * w + (w - 1 - x)] } }
            XCTAssertEqual(planeBytes(out, p), flipped, "plane \(p)")
        }
        XCTAssertTrue(capture.paddingIntact)
    }

    func testResizingChainIsRefusedAtConfigureWithTheContractMessage() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        XCTAssertThrowsChainError(try PreProcessorHook(chain: "scale=width=1280:height=720", registry: registry,
                                                       frameFormat: VideoFormat(width: 1920, height: 1080))) {
            XCTAssertEqual($0, .contract("pre-processing cannot resize: chain output 1280x720, frame 1920x1080"))
            XCTAssertEqual($0.description, "pre-processing cannot resize: chain output 1280x720, frame 1920x1080")
        }
        // Without a known frame size, the probe sizes catch it.
        XCTAssertThrowsChainError(try PreProcessorHook(chain: "scale=width=1280:height=720", registry: registry)) {
            XCTAssertEqual($0.description, "pre-processing cannot resize: chain output 1280x720, frame 640x480")
        }
        // A quarter turn of a non-square frame swaps its size.
        XCTAssertThrowsChainError(try PreProcessorHook(chain: "rotate=angle=90", registry: registry,
                                                       frameFormat: VideoFormat(width: 640, height: 360))) {
            XCTAssertEqual($0.description, "pre-processing cannot resize: chain output 360x640, frame 640x360")
        }
        // Out-of-place filters that keep the size are fine.
        XCTAssertNoThrow(try PreProcessorHook(chain: "rotate=angle=180,mirror", registry: registry,
                                              frameFormat: VideoFormat(width: 640, height: 360)))
    }

    func testReconfigureWithAResizingChainKeepsTheOldChain() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let hook = try PreProcessorHook(chain: "test_gate=add=1", registry: registry)
        let emulator = SDKSessionEmulator()
        let picture = patternBuffer(width: 64, height: 36)
        let capture = emulator.makeCaptureFrame(format: picture.format)
        emulator.deliverPreProcess(hook, picture: picture.frame, into: capture)
        // The last frame's size is what a new chain is checked against.
        XCTAssertThrowsChainError(try hook.configure(chain: "scale=width=32:height=18")) {
            XCTAssertEqual($0.description, "pre-processing cannot resize: chain output 32x18, frame 64x36")
        }
        XCTAssertEqual(hook.chainText, "test_gate=add=1")
        let out = emulator.deliverPreProcess(hook, picture: picture.frame, into: capture)
        XCTAssertEqual(planeBytes(out, 0)[0], planeBytes(picture.frame, 0)[0] &+ 1)
    }

    /// Before the first frame, setChain checks a new chain against the format the hook was
    /// created with (it used the probe sizes, refusing a scale to that very size).
    func testSetChainBeforeTheFirstFrameUsesTheFormatTheHookWasCreatedWith() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let hook = try PreProcessorHook(chain: "", registry: registry, frameFormat: VideoFormat(width: 320, height: 240))
        XCTAssertNoThrow(try hook.setChain("scale=width=320:height=240"), "keeps the camera's 320x240")
        XCTAssertEqual(hook.chainText, "scale=width=320:height=240")
        XCTAssertThrowsChainError(try hook.setChain("scale=width=160:height=120")) {
            XCTAssertEqual($0.description, "pre-processing cannot resize: chain output 160x120, frame 320x240")
        }
    }

    func testChainSwapTakesEffectAtTheNextFrame() throws {
        let hook = try PreProcessorHook(chain: "test_gate=add=1", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let picture = flatBuffer(width: 16, height: 16, y: 100)
        let capture = emulator.makeCaptureFrame(format: picture.format)
        XCTAssertEqual(emulator.deliverPreProcess(hook, picture: picture.frame, into: capture).plane(0)[0], 101)
        try hook.configure(chain: "test_gate=add=7")
        XCTAssertEqual(emulator.deliverPreProcess(hook, picture: picture.frame, into: capture).plane(0)[0], 107)
        try hook.configure(chain: "")
        XCTAssertEqual(emulator.deliverPreProcess(hook, picture: picture.frame, into: capture).plane(0)[0], 100)
    }

    func testFrameFormatChangesAreRenegotiatedAndRangeIsKept() throws {
        let hook = try PreProcessorHook(chain: "copy,test_gate=add=2", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        for (w, h, range) in [(32, 18, ColorRange.limited), (48, 64, .full), (32, 18, .limited)] {
            let picture = patternBuffer(width: w, height: h, range: range)
            let capture = emulator.makeCaptureFrame(format: picture.format)
            XCTAssertEqual(capture.isLimitedI420, range == .limited)
            let out = emulator.deliverPreProcess(hook, picture: picture.frame, into: capture)
            XCTAssertEqual(planeBytes(out, 0)[0], planeBytes(picture.frame, 0)[0] &+ 2)
            XCTAssertEqual(planeBytes(out, 1), planeBytes(picture.frame, 1))
        }
        XCTAssertEqual(hook.metrics.hook.errors, 0)
    }

    func testFrameUsedAfterTheCallbackIsAViolation() {
        // The emulator's contract check itself: a hook that keeps the frame and reads it later.
        final class Keeper: SDKVideoSourcePreProcessor {
            var kept: (any YUVProcessDataI420)?
            func onPreProcessRawData(_ rawData: any YUVProcessDataI420) { kept = rawData }
        }
        let emulator = SDKSessionEmulator()
        let keeper = Keeper()
        let picture = patternBuffer(width: 8, height: 8)
        emulator.deliverPreProcess(keeper, picture: picture.frame, into: emulator.makeCaptureFrame(format: picture.format))
        XCTAssertNil(keeper.kept?.getYBuffer())
        XCTAssertEqual(emulator.violations.count, 1)
    }

    func testNoHeapAllocationPerFrameInSteadyState() throws {
        let hook = try PreProcessorHook(chain: "copy,test_gate=add=1", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let picture = patternBuffer(width: 64, height: 48)
        let capture = emulator.makeCaptureFrame(format: picture.format)
        for _ in 0..<3 { hook.onPreProcessRawData(capture) }
        let before = rawfx_thread_allocation_count()
        for _ in 0..<50 { hook.onPreProcessRawData(capture) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
    }

    func testAnAdapterCanForwardPlanePointersThroughAReusedView() throws {
        // What a C shim does: one view per capture thread, updated for every SDK frame.
        let hook = try PreProcessorHook(chain: "copy,test_gate=add=4", registry: processorRegistry())
        let view = YUVProcessDataView()
        let planes = patternBuffer(width: 20, height: 10, extraStride: 12)
        let before = planeBytes(planes.frame, 0)
        func c(_ p: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<CChar> {
            UnsafeMutableRawPointer(p).assumingMemoryBound(to: CChar.self)
        }
        let f = planes.frame
        view.update(width: 20, height: 10, y: c(f.plane(0)), yStride: f.stride(0), u: c(f.plane(1)), uStride: f.stride(1),
                    v: c(f.plane(2)), vStride: f.stride(2), rotation: 0, isLimitedI420: true)
        XCTAssertEqual(view.getYBuffer(3), c(f.plane(0) + 3 * f.stride(0)))
        hook.onPreProcessRawData(view)
        view.clear()
        XCTAssertNil(view.getYBuffer())
        XCTAssertEqual(planeBytes(planes.frame, 0)[0], before[0] &+ 4)
        XCTAssertEqual(Array(planeBytes(planes.frame, 0).dropFirst()), Array(before.dropFirst()))
        XCTAssertEqual(Set(paddingBytes(planes.frame, 0)), [0xEE])
    }
}
