// The isolation protocol's host side against a hostile helper played in process
// (Harnesses/FuzzIsolationHost/isolation_host_fuzz.c: the C proxy's private parts are reached
// from C, not from Swift).
import FuzzIsolationHost
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let input else { return 0 }
    return rfx_fuzz_isolation_host(input, size)
}

runFuzzer(fuzz)
