/// "Did you mean …?" for misspelt keys, names and days.
enum Suggestion {
    /// The candidate closest to `word` (case-insensitive edit distance), if it is close enough
    /// to be a plausible typo.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let w = Array(word.lowercased())
        let scored = candidates.map { ($0, distance(w, Array($0.lowercased()))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return best.1 <= max(1, min(3, w.count / 3)) ? best.0 : nil
    }

    /// " (did you mean X?)" or "".
    static func phrase(for word: String, among candidates: [String]) -> String {
        closest(to: word, among: candidates).map { " (did you mean \($0)?)" } ?? ""
    }

    /// Levenshtein distance.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for (i, ca) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, cb) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (ca == cb ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
