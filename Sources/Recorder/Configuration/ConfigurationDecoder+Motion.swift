import Capture

extension ConfigurationDecoder {
    static let motionKeys = ["camera", "sensitivity", "min_area_percent", "min_seconds", "gap_seconds", "max_seconds", "mask", "schedule", "fps"]

    /// `[[motion]]`: the sensitivity preset and the knobs it sets, masks, a schedule.
    mutating func decodeMotion(_ job: inout Reader, hasLocation: Bool) -> MotionJob {
        var motion = MotionJob()
        motion.line = job.line
        motion.schedule = schedule(&job, hasLocation: hasLocation)
        if let s = string(&job, "sensitivity") {
            if let value = MotionSettings.Sensitivity(rawValue: s.value) { motion.settings.sensitivity = value } else {
                let all = MotionSettings.Sensitivity.allCases.map(\.rawValue)
                report(s.line, "unknown sensitivity \"\(s.value)\"\(Suggestion.phrase(for: s.value, among: all))", fix: "use low, medium (the default) or high")
            }
        }
        if let p = number(&job, "min_area_percent", in: 0.01...100) { motion.settings.minAreaPercent = p }
        if let s = number(&job, "min_seconds", in: 0...60) { motion.settings.minSeconds = s }
        if let s = number(&job, "gap_seconds", in: 0.5...3600) { motion.settings.gapSeconds = s }
        if let s = number(&job, "max_seconds", in: 1...86_400) {
            if s > motion.settings.minSeconds {
                motion.settings.maxSeconds = s
            } else {
                // Every event would begin already past its cap and be cut at once.
                report(job.line, "max_seconds \(s) is not longer than min_seconds \(motion.settings.minSeconds): every event would be cut as it begins",
                       fix: "make max_seconds longer than min_seconds (the default is 300)")
            }
        }
        if let f = number(&job, "fps", in: 1...30) { motion.settings.framesPerSecond = f }
        if let node = job.take("mask") {
            var items: [TOMLNode] = []
            switch node.value {
            case .string: items = [node]
            case .array(let a): items = a
            default: report(node.line, "mask must be a list of polygons, got \(node.typeName)", fix: "write mask = [\"0,0 40%,0 40%,15% 0,15%\"]")
            }
            for item in items {
                // Pixel corners are checked against the picture's size when the camera opens.
                guard case .string(let text) = item.value else {
                    report(item.line, "a mask must be text in quotes, got \(item.typeName)", fix: "write mask = [\"0,0 40%,0 40%,15% 0,15%\"]")
                    continue
                }
                guard MotionSettings.mask(text, width: 100_000, height: 100_000) != nil else {
                    report(item.line, "mask \"\(text)\" is not a polygon",
                           fix: "write at least three corners \"x,y\" in pixels or percent, separated by spaces: \"0,0 40%,0 40%,15% 0,15%\"")
                    continue
                }
                motion.masks.append(text)
            }
        }
        unknown(job, Self.motionKeys)
        return motion
    }
}
