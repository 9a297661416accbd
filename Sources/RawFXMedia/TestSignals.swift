#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX

/// SplitMix64: a small, fast, seeded generator, so generated signals are the same on every
/// run and every platform.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    public mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1p-53 }
    /// Standard normal (Box–Muller).
    public mutating func nextGaussian() -> Double {
        let u1 = max(nextUnit(), 1e-300), u2 = nextUnit()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}

extension RGBAImage {
    /// The built-in logo: “RawFX” in white block letters with soft (anti-aliased) edges on a
    /// translucent dark rounded plate, drawn in code (deterministic). 400×100 by default;
    /// any size scales the letters to fit.
    public static func rawFXLogo(width: Int = 400, height: Int = 100) -> RGBAImage {
        // 5×7 glyphs.
        let glyphs: [[String]] = [
            ["####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"],  // R
            [".....", ".....", ".###.", "....#", ".####", "#...#", ".####"],  // a
            [".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#."],  // w
            ["#####", "#....", "#....", "####.", "#....", "#....", "#...."],  // F
            ["#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"],  // X
        ]
        let columns = glyphs.count * 6 - 1, rows = 7
        var cells = [[Bool]](repeating: [Bool](repeating: false, count: columns), count: rows)
        for (g, glyph) in glyphs.enumerated() {
            for (r, line) in glyph.enumerated() {
                for (c, ch) in line.enumerated() where ch == "#" { cells[r][g * 6 + c] = true }
            }
        }
        let cell = max(1.0, min(Double(width) * 0.86 / Double(columns), Double(height) * 0.74 / Double(rows)))
        let originX = (Double(width) - cell * Double(columns)) / 2
        let originY = (Double(height) - cell * Double(rows)) / 2
        let radius = Double(min(width, height)) * 0.18
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for py in 0..<height {
            for px in 0..<width {
                let x = Double(px) + 0.5, y = Double(py) + 0.5
                // Plate: a rounded rectangle, 1.5 px soft edge, 45% opaque.
                let dx = max(radius - x, x - (Double(width) - radius), 0)
                let dy = max(radius - y, y - (Double(height) - radius), 0)
                let plateDistance = (dx * dx + dy * dy).squareRoot() - radius
                let plate = max(0, min(1, 0.5 - plateDistance / 1.5)) * 0.45
                // Letters: distance to the nearest lit cell among the 3×3 around this pixel.
                let cx = Int(((x - originX) / cell).rounded(.down)), cy = Int(((y - originY) / cell).rounded(.down))
                var nearest = Double.infinity
                for r in (cy - 1)...(cy + 1) where r >= 0 && r < rows {
                    for c in (cx - 1)...(cx + 1) where c >= 0 && c < columns && cells[r][c] {
                        let left = originX + Double(c) * cell, top = originY + Double(r) * cell
                        let ex = max(left - x, x - (left + cell), 0), ey = max(top - y, y - (top + cell), 0)
                        nearest = min(nearest, (ex * ex + ey * ey).squareRoot())
                    }
                }
                let ink = max(0, min(1, 1 - nearest / max(1.0, cell * 0.12)))
                // Composite white ink over the dark plate (straight alpha).
                let alpha = ink + plate * (1 - ink)
                let value = alpha > 0 ? (ink * 255 + plate * (1 - ink) * 20) / alpha : 0
                let i = (py * width + px) * 4
                pixels[i] = UInt8(value.rounded())
                pixels[i + 1] = UInt8(value.rounded())
                pixels[i + 2] = UInt8(value.rounded())
                pixels[i + 3] = UInt8((alpha * 255).rounded())
            }
        }
        return RGBAImage(width: width, height: height, pixels: pixels)
    }
}

/// Generated audio for tests, demos and benchmarks; all deterministic.
public enum TestAudio {
    /// Speech-like mono audio: a harmonic series (a glottal-like 1/k spectrum shaped by two
    /// moving formants) whose pitch glides between about 100 and 220 Hz, under a 3–5 Hz
    /// syllabic envelope, in utterances of 0.6–1.6 s separated by 0.2–0.5 s pauses.
    /// Peaks near `peak` (fraction of full scale). The same seed gives the same samples.
    public static func speech(sampleRate: Int, seconds: Double, seed: UInt64 = 1, peak: Double = 0.5) -> [Int16] {
        let count = Int(Double(sampleRate) * seconds)
        var out = [Float](repeating: 0, count: count)
        var random = SeededRandom(seed: seed)
        let rate = Double(sampleRate)
        let maxFrequency = min(4000, rate * 0.45)
        var t = Int(rate * 0.1)  // a short lead-in of silence
        var phase = 0.0
        var amplitudes = [Double](repeating: 0, count: 64)
        while t < count {
            let length = Int(rate * (0.6 + random.nextUnit()))
            let syllableRate = 3 + 2 * random.nextUnit()
            let basePitch = 100 + 60 * random.nextUnit()
            let glide = 30 + 40 * random.nextUnit()
            let formantSeed = random.nextUnit() * 10
            var i = 0
            while i < length && t < count {
                let time = Double(i) / rate
                let progress = Double(i) / Double(length)
                // Pitch: a rise and fall over the utterance plus declination.
                let f0 = basePitch + glide * sin(Double.pi * progress) - 15 * progress
                phase += 2 * Double.pi * f0 / rate
                if phase > 2 * Double.pi { phase -= 2 * Double.pi }
                // Syllables: a raised sine at 3–5 Hz, sharpened; the utterance fades in and out.
                let s = sin(Double.pi * syllableRate * time)
                let envelope = pow(s * s, 1.5) * min(1, min(progress, 1 - progress) * 10)
                // Formants move per syllable.
                let syllable = (syllableRate * time).rounded(.down) + formantSeed
                let f1 = 450 + 300 * (0.5 + 0.5 * sin(syllable * 1.7))
                let f2 = 1100 + 900 * (0.5 + 0.5 * sin(syllable * 2.3 + 1))
                let harmonics = min(amplitudes.count, Int(maxFrequency / f0))
                // sin(kφ) by the Chebyshev recurrence: one sin and one cos per sample.
                let c2 = 2 * cos(phase)
                var previous = 0.0, current = sin(phase)
                var sum = 0.0
                var k = 1
                while k <= harmonics {
                    let f = Double(k) * f0
                    let d1 = (f - f1) / 120, d2 = (f - f2) / 180
                    amplitudes[k - 1] = (1 / Double(k)) * (0.3 + 2.5 * exp(-d1 * d1) + 1.6 * exp(-d2 * d2))
                    sum += amplitudes[k - 1] * current
                    let next = c2 * current - previous
                    previous = current
                    current = next
                    k += 1
                }
                out[t] = Float(sum * envelope)
                i += 1
                t += 1
            }
            t += Int(rate * (0.2 + 0.3 * random.nextUnit()))  // pause
        }
        let maximum = out.reduce(Float(0)) { max($0, abs($1)) }
        let scale = maximum > 0 ? Float(peak * 32767) / maximum : 0
        return out.map { Int16(($0 * scale).rounded()) }
    }

    /// Interleaves mono samples into `channels` identical channels.
    public static func interleave(_ mono: [Int16], channels: Int) -> [Int16] {
        guard channels > 1 else { return mono }
        var out = [Int16](repeating: 0, count: mono.count * channels)
        for i in mono.indices { for c in 0..<channels { out[i * channels + c] = mono[i] } }
        return out
    }

    /// Gaussian white noise with the given RMS (in sample units), clipped to 16 bits.
    public static func whiteNoise(count: Int, rms: Double, seed: UInt64 = 2) -> [Int16] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { _ in Int16(max(-32768, min(32767, (random.nextGaussian() * rms).rounded()))) }
    }

    /// `signal` plus white noise whose power is the signal's power (over the whole signal)
    /// divided by 10^(snr/10). Saturates at the 16-bit limits.
    public static func addNoise(to signal: [Int16], snr: Double, seed: UInt64 = 2) -> [Int16] {
        let rms = (power(signal) / pow(10, snr / 10)).squareRoot()
        var random = SeededRandom(seed: seed)
        return signal.map { Int16(max(-32768, min(32767, (Double($0) + random.nextGaussian() * rms).rounded()))) }
    }

    /// Mean square of the samples.
    public static func power(_ samples: [Int16]) -> Double {
        guard !samples.isEmpty else { return 0 }
        var sum = 0.0
        for s in samples { sum += Double(s) * Double(s) }
        return sum / Double(samples.count)
    }

    /// Signal-to-noise ratio in dB of `processed` against the clean `reference`, where
    /// `processed[i + lag]` lines up with `reference[i]` (a filter's delay), over the overlap:
    /// 10·log10(Σ ref² / Σ (ref − processed)²). +∞ when identical.
    public static func snr(reference: [Int16], processed: [Int16], lag: Int = 0) -> Double {
        var signal = 0.0, noise = 0.0
        let start = max(0, -lag)
        let end = min(reference.count, processed.count - lag)
        guard end > start else { return -.infinity }
        reference.withUnsafeBufferPointer { r in
            processed.withUnsafeBufferPointer { p in
                var i = start
                while i < end {
                    let a = Double(r[i]), d = a - Double(p[i + lag])
                    signal += a * a
                    noise += d * d
                    i += 1
                }
            }
        }
        return noise == 0 ? .infinity : 10 * log10(signal / noise)
    }

    /// The delay (0…maxLag samples) at which `processed` best matches `reference`: the peak
    /// of their cross-correlation over the loudest `window` samples of the reference.
    public static func estimateLag(reference: [Int16], processed: [Int16], maxLag: Int, window: Int = 8192) -> Int {
        guard reference.count > 0 else { return 0 }
        let n = min(window, reference.count)
        // The loudest window, by blocks of n/4.
        let step = max(1, n / 4)
        var bestStart = 0, bestEnergy = -1.0
        var s = 0
        while s + n <= reference.count {
            let e = power(Array(reference[s..<(s + n)]))
            if e > bestEnergy { bestEnergy = e; bestStart = s }
            s += step
        }
        var bestLag = 0, bestScore = -Double.infinity
        reference.withUnsafeBufferPointer { r in
            processed.withUnsafeBufferPointer { p in
                for lag in 0...max(0, maxLag) {
                    var dot = 0.0, energy = 0.0
                    var i = bestStart
                    let end = min(bestStart + n, p.count - lag)
                    while i < end {
                        let b = Double(p[i + lag])
                        dot += Double(r[i]) * b
                        energy += b * b
                        i += 1
                    }
                    let score = energy > 0 ? dot / energy.squareRoot() : -Double.infinity
                    if score > bestScore { bestScore = score; bestLag = lag }
                }
            }
        }
        return bestLag
    }
}
