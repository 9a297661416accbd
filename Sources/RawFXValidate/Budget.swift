import Foundation

/// How long `process` may take: a share of the frame's duration (video, at `frameRate`) or
/// of the block's (audio: its frames at its rate). `rawfx validate --budget-percent`.
public struct Budget: Sendable {
    public var percent: Double
    public var frameRate: Double

    public init(percent: Double = 100, frameRate: Double = 30) {
        self.percent = percent
        self.frameRate = frameRate
    }

    /// Judges the timed calls: the median must be within the budget (a single slow call on a
    /// loaded machine is not the filter's fault; a filter slower than real time is slow on
    /// most calls). Returns the passing line; a failure goes into `findings`.
    func judge(times: [Double], duration: Double, what: String, findings: inout Findings) -> String {
        guard !times.isEmpty, duration > 0 else {
            findings.notes.append("no call timed")
            return "no call timed"
        }
        let sorted = times.sorted()
        let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        let limit = duration * percent / 100
        let figures = "median \(ms(median)), max \(ms(sorted.last!)) of \(times.count) process calls at \(what); "
            + "budget \(ms(limit)) (\(number(percent)) % of \(ms(duration)), the \(what.contains("Hz") ? "block" : "frame at \(number(frameRate)) fps"))"
        if median > limit {
            findings.fail("process is too slow for real time: " + figures)
        }
        return figures
    }

    private func ms(_ seconds: Double) -> String {
        let value = seconds * 1000
        return (value >= 10 ? String(Int(value.rounded())) : String(format: "%.2f", value)) + " ms"
    }

    private func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
