/// A cluster node's name, as `[cluster] node`, `VIGIL_NODE` and the shared database carry it:
/// 1–63 of a-z 0-9 . _ - (it names files, log lines and URLs, so nothing else is let in).
public enum NodeName {
    public static func isValid(_ text: String) -> Bool {
        (1...63).contains(text.count) && text.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "." || $0 == "_" || $0 == "-" }
    }
}
