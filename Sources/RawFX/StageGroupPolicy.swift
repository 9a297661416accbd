/// The one seam through which stages that run together outside the chain reach it: an
/// isolation group (`@isolate(group=NAME)`, one helper runs several stages behind its first
/// stage's proxy) and an isolated stage's shared memory. The chains ask their policy at each
/// point where such a stage behaves otherwise than a stage alone; `StandaloneStages` answers
/// as for stages alone, `IsolationStageGroups` (Isolation.swift) for isolated ones. Neither
/// `VideoChain` nor the run-time control knows more of isolation than this.
///
/// Only the control side and negotiation ask it, never the frame path (a stage bypassed
/// inside its group is a flag of the stage).
protocol StageGroupPolicy: Sendable {
    /// [control, at build] The index of the first stage of the group `instance` (at `index`) is
    /// in, when it is in a group of several; nil for a stage alone. A RECONFIGURE parameter of
    /// a grouped stage renegotiates the group instead of making a new instance.
    func groupStart(of instance: FilterInstance, at index: Int) -> Int?

    /// [after configure] What a grouped stage was negotiated as inside its group (the chain
    /// sees the group's output at its first stage, and stages that pass it on); nil otherwise.
    func memberNegotiation(of instance: FilterInstance) -> (input: StreamFormat, output: StreamFormat, latency: Int)?

    /// [after a failed configure or process] How many stages after `instance` the one whose
    /// filter returned the error is (its group's first stage reports for all); nil for itself.
    func failedMemberOffset(of instance: FilterInstance) -> Int?

    /// [process, never waits] Bypasses a grouped stage inside its group (the chain still
    /// calls it, and counts its frames as bypassed) and returns true; false for a stage alone,
    /// which the chain skips itself.
    func setBypassInGroup(_ instance: FilterInstance, _ bypassed: Bool) -> Bool
}

extension StageGroupPolicy {
    func groupStart(of instance: FilterInstance, at index: Int) -> Int? { nil }
    func memberNegotiation(of instance: FilterInstance) -> (input: StreamFormat, output: StreamFormat, latency: Int)? { nil }
    func failedMemberOffset(of instance: FilterInstance) -> Int? { nil }
    func setBypassInGroup(_ instance: FilterInstance, _ bypassed: Bool) -> Bool { false }
}

/// Stages alone, in the chain's own memory: every answer is the default.
struct StandaloneStages: StageGroupPolicy {}

/// The policy for a chain of `specs`: isolation's when any stage is isolated.
func stageGroupPolicy(for specs: [FilterSpec]) -> any StageGroupPolicy {
    specs.contains { $0.isolation != nil } ? IsolationStageGroups() : StandaloneStages()
}
