import RawFX

/// A program recorded to files or pipes: the video as Y4M (`ffmpeg -f yuv4mpegpipe -i -`
/// reads it from a pipe), the audio as WAV or raw 16-bit PCM (`-f s16le -ar 48000 -ac 1`).
/// Hand `video` and `audio` to `ProgramPublisher.Output.custom` (RawFXSDK), or call them from
/// any loop. Nothing is allocated per frame or block once the first frame is written.
public final class ProgramRecorder {
    public enum AudioContainer: Sendable { case wav, raw }
    public let y4m: Y4MWriter
    public let wav: WAVWriter?
    private let rawAudio: MediaOutput?
    public private(set) var audioFramesWritten = 0
    /// The first write error (the recorder stops writing that side after it).
    public private(set) var error: MediaError?

    /// `video` and `audio` are open outputs (a file, a pipe's descriptor); `audio` nil: video only.
    public init(video: MediaOutput, format: VideoFormat, frameRate: Y4MRatio,
                audio: MediaOutput? = nil, audioFormat: AudioFormat = AudioFormat(sampleRate: 48000, channels: 1),
                audioContainer: AudioContainer = .wav) throws(MediaError) {
        y4m = try Y4MWriter(video, header: Y4MHeader(format: format, frameRate: frameRate))
        if let audio, audioContainer == .wav {
            wav = try WAVWriter(audio, format: audioFormat)
            rawAudio = nil
        } else {
            wav = nil
            rawAudio = audio
        }
    }

    /// Appends one program frame; false once writing failed (e.g. the reader of a pipe left).
    public func video(_ frame: VideoFrame) -> Bool {
        guard error == nil else { return false }
        do { try y4m.write(frame) } catch { self.error = error; return false }
        return true
    }

    /// Appends one block of program audio (mono at the recorder's format).
    public func audio(_ block: AudioBlock) -> Bool {
        guard error == nil else { return false }
        do {
            if let wav {
                try wav.write(block)
            } else if let rawAudio {
                try rawAudio.write(UnsafeRawPointer(block.samples), count: block.frameCount * block.format.channels * 2)
            }
        } catch {
            self.error = error
            return false
        }
        audioFramesWritten += block.frameCount
        return true
    }

    /// Finishes both outputs (a seekable WAV gets its sizes).
    public func close() throws(MediaError) {
        try y4m.close()
        try wav?.close()
        try rawAudio?.close()
    }
}
