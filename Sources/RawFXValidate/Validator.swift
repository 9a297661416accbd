// The conformance checker behind `rawfx validate` (being written).
import RawFX
