import CRawFXEmbed
import RawFX

/// Parameter and bypass changes while media flows: what every *_set_parameter and *_set_bypass
/// of the C API acts on (a chain handle; a hook, through its `RunTimeControl`; one of
/// production studio's two chains).
protocol ParameterControl {
    func setParameter(_ address: String, _ value: String) throws(ChainError)
    func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError)
}

extension ChainControl: ParameterControl {}

/// What the C API does alike on video and audio chains: run-time control and metrics.
protocol EmbeddedChain: AnyObject {
    /// [control] Where a handle's *_set_parameter and *_set_bypass go: the chain's control
    /// handle (the newest chain's, for a video chain).
    var parameterControl: any ParameterControl { get }
    /// [process] The figures of the chain in force.
    var stageMetrics: [Metrics] { get }
}

extension AudioChain: EmbeddedChain {
    var parameterControl: any ParameterControl { control }
    var stageMetrics: [Metrics] { control.metrics }
}

extension SwappableVideoChain: EmbeddedChain {
    var parameterControl: any ParameterControl { control }
    var stageMetrics: [Metrics] { chain.control.metrics }
}

/// The chain behind a handle, or the failure for NULL.
private func chain<C: EmbeddedChain>(_ pointer: OpaquePointer?, _ type: C.Type, _ function: String) -> Result<C, RawFXCallError> {
    guard let pointer else { return .failure(RawFXCallError(invalid(function, "chain is NULL"))) }
    return .success(object(pointer, as: type))
}

/// The one path of every *_set_parameter call: the strings checked, the change made, an error mapped.
func setParameter(_ function: String, _ target: Result<any ParameterControl, RawFXCallError>,
                  _ address: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> rawfx_result {
    guard let address = string(address) else { return invalid(function, "address is NULL; expected \"filter.parameter\"") }
    guard let value = string(value) else { return invalid(function, "value is NULL") }
    switch target {
    case .failure(let error): return error.code
    case .success(let control):
        do {
            try control.setParameter(address, value)
            return rawfxOK
        } catch {
            return fail(error)
        }
    }
}

/// The one path of every *_set_bypass call.
func setBypass(_ function: String, _ target: Result<any ParameterControl, RawFXCallError>,
               _ stage: UnsafePointer<CChar>?, _ bypassed: Int32) -> rawfx_result {
    guard let stage = string(stage) else { return invalid(function, "stage is NULL; expected a filter id or stage index") }
    switch target {
    case .failure(let error): return error.code
    case .success(let control):
        do {
            try control.setBypass(stage, bypassed != 0)
            return rawfxOK
        } catch {
            return fail(error)
        }
    }
}

func setParameter<C: EmbeddedChain>(_ type: C.Type, _ function: String, _ pointer: OpaquePointer?,
                                    _ address: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> rawfx_result {
    setParameter(function, chain(pointer, type, function).map { $0.parameterControl }, address, value)
}

func setBypass<C: EmbeddedChain>(_ type: C.Type, _ function: String, _ pointer: OpaquePointer?,
                                 _ stage: UnsafePointer<CChar>?, _ bypassed: Int32) -> rawfx_result {
    setBypass(function, chain(pointer, type, function).map { $0.parameterControl }, stage, bypassed)
}

func metrics<C: EmbeddedChain>(_ type: C.Type, _ function: String, _ pointer: OpaquePointer?,
                               _ out: UnsafeMutablePointer<rawfx_stage_metrics>?, _ capacity: Int,
                               _ count: UnsafeMutablePointer<Int>?) -> rawfx_result {
    switch chain(pointer, type, function) {
    case .failure(let error): return error.code
    case .success(let chain): return writeMetrics(chain.stageMetrics, out, capacity: capacity, count: count, function)
    }
}

func metricsJSON<C: EmbeddedChain>(_ type: C.Type, _ function: String, _ pointer: OpaquePointer?,
                                   _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int,
                                   _ length: UnsafeMutablePointer<Int>?) -> rawfx_result {
    switch chain(pointer, type, function) {
    case .failure(let error): return error.code
    case .success(let chain): return writeString(metricsJSON(chain.stageMetrics), buffer, capacity: capacity, length: length, function)
    }
}
