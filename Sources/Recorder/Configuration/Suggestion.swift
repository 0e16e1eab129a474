/// "Did you mean …?" for misspelt keys, names and days.
enum Suggestion {
    /// The candidate closest to `word` (case-insensitive edit distance), if it is close enough
    /// to be a plausible typo.
    static func closest(to word: String, among candidates: [String]) -> String? {
        // At most three edits apart: a much longer word (a huge line) needs no comparison.
        guard word.count <= (candidates.map(\.count).max() ?? 0) + 3 else { return nil }
        let w = Array(word.lowercased())
        let scored = candidates.map { ($0, distance(w, Array($0.lowercased()))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        let allowed = w.count <= 2 ? 0 : max(1, min(3, (w.count + 1) / 3))
        return best.1 <= allowed ? best.0 : nil
    }

    /// " (did you mean X?)" or "".
    static func phrase(for word: String, among candidates: [String]) -> String {
        closest(to: word, among: candidates).map { " (did you mean \($0)?)" } ?? ""
    }

    /// Edit distance where swapping two neighbours counts as one edit (optimal string alignment).
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }
}
