/// Text from outside the engine (a plugin's messages, names and ids, a chain string, a
/// parameter value, a path) made safe to print: every control character (C0, DEL, C1) and
/// every bidirectional formatting character is written as an escape (`\x1b`, `\u{202E}`), so
/// no byte a plugin chose can move the cursor, ring the bell, erase a line, reorder what a
/// reader sees, or start a new line that looks like the tool's own (`PASS …`). Printable
/// text, backslashes included, is unchanged, so escaping twice changes nothing.
///
/// The one place this is decided: the log (`RawFXLog`, the command's stderr handler), the
/// command's error lines, `rawfx plugins` and `rawfx validate` all go through it (the C
/// runtime's fallback writer has the same rule: `host.c`).
public func terminalSafe(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var out = ""
    out.reserveCapacity(text.utf8.count + 16)
    for scalar in text.unicodeScalars {
        guard needsEscape(scalar) else {
            out.unicodeScalars.append(scalar)
            continue
        }
        switch scalar {
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            let hex = String(scalar.value, radix: 16)
            out += scalar.value < 0x100 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{" + hex.uppercased() + "}"
        }
    }
    return out
}

/// C0 controls, DEL, C1 controls, and the bidirectional marks, embeddings, overrides and
/// isolates (U+061C, U+200E-F, U+202A-E, U+2066-9).
@inline(__always) private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    let v = scalar.value
    return v < 0x20 || (v >= 0x7F && v <= 0x9F) || v == 0x061C || v == 0x200E || v == 0x200F
        || (v >= 0x202A && v <= 0x202E) || (v >= 0x2066 && v <= 0x2069)
}
