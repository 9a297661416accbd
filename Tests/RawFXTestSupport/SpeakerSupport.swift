import Foundation
import RawFX
import RawFXEmulator
import RawFXSDK

/// Collects what a speaker hook's sink receives, per stream.
final class SinkRecorder: @unchecked Sendable {
    struct Block: Equatable {
        var stream: AudioStreamID
        var format: AudioFormat
        var samples: [Int16]
        var timestamp: Int64
    }
    private let lock = NSLock()
    private var blocks: [Block] = []

    var sink: VirtualSpeakerHook.Sink {
        { [self] stream, block in
            let b = Block(stream: stream, format: block.format, samples: Array(block.buffer), timestamp: block.timestampMicroseconds)
            lock.lock()
            blocks.append(b)
            lock.unlock()
        }
    }

    var all: [Block] { lock.lock(); defer { lock.unlock() }; return blocks }
    func samples(of stream: AudioStreamID) -> [Int16] { all.filter { $0.stream == stream }.flatMap(\.samples) }
}

/// Runs `signal` through a fresh chain in chunks of `chunk` frames: the reference output of
/// one stream processed alone.
/// What one chain of `chain` makes of `signal` fed in `chunk`s; `drained`: then drained, as a
/// speaker stream is when it ends (its latency tail out, nothing added).
func separateChainOutput(_ chain: String, registry: PluginRegistry, signal: [Int16], format: AudioFormat, chunk: Int,
                         drained: Bool = false) throws -> [Int16] {
    let c = try AudioChain(chain, registry: registry)
    var out: [Int16] = []
    var copy = signal
    try copy.withUnsafeMutableBufferPointer { p throws(ChainError) in
        var offset = 0
        while offset < signal.count / format.channels {
            let n = min(chunk, signal.count / format.channels - offset)
            try c.process(AudioBlock(samples: p.baseAddress! + offset * format.channels, frameCount: n, format: format)) {
                out.append(contentsOf: $0.buffer)
            }
            offset += n
        }
    }
    if drained { try c.drain { out.append(contentsOf: $0.buffer) } }
    return out
}

func deliverPCM(_ emulator: SDKSessionEmulator, _ hook: VirtualSpeakerHook, _ stream: AudioStreamID,
                     _ samples: ArraySlice<Int16>, _ format: AudioFormat, ms: UInt64,
                     memoryMode: RawDataMemoryMode = .stack, misalign: Bool = false) {
    Array(samples).withUnsafeBufferPointer {
        emulator.deliverSpeakerAudio(hook, stream: stream, samples: $0, format: format, timeStampMilliseconds: ms,
                                     memoryMode: memoryMode, misalign: misalign)
    }
}

/// Whether the built plugins include a filter (the YUV and Speex plugins are written in parallel).
func hasFilter(_ id: String, in registry: PluginRegistry) -> Bool { (try? registry.filterType(id)) != nil }
