import Foundation

/// A place on Earth, for sunrise and sunset.
public struct GeoLocation: Sendable, Equatable, Hashable {
    /// Degrees, north positive.
    public var latitude: Double
    /// Degrees, east positive.
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// Sunrise and sunset computed locally (no network) with the sunrise equation used by NOAA's
/// calculator: mean anomaly, equation of center, ecliptic longitude, declination, and the hour
/// angle at which the sun's center is 0.833° below the horizon (refraction and the sun's radius).
/// Accurate to about a minute away from the poles.
public enum SunTimes {
    public enum Day: Equatable, Sendable {
        case normal(sunrise: Date, sunset: Date)
        /// The sun does not set (polar day).
        case alwaysUp
        /// The sun does not rise (polar night).
        case alwaysDown
    }

    /// The sun's day nearest to `noon` (an instant near local noon) at `location`.
    public static func day(near noon: Date, at location: GeoLocation) -> Day {
        let rad = Double.pi / 180
        let julianDate = noon.timeIntervalSince1970 / 86_400 + 2_440_587.5
        // The solar transit closest to the given noon.
        let n = (julianDate - 2_451_545.0 - 0.0008 + location.longitude / 360).rounded()
        let meanSolarTime = n + 0.0008 - location.longitude / 360
        let m = (357.5291 + 0.98560028 * meanSolarTime).truncatingRemainder(dividingBy: 360)
        let c = 1.9148 * sin(m * rad) + 0.0200 * sin(2 * m * rad) + 0.0003 * sin(3 * m * rad)
        let lambda = (m + c + 180 + 102.9372).truncatingRemainder(dividingBy: 360)
        let transit = 2_451_545.0 + meanSolarTime + 0.0053 * sin(m * rad) - 0.0069 * sin(2 * lambda * rad)
        let sinDeclination = sin(lambda * rad) * sin(23.4397 * rad)
        let cosDeclination = cos(asin(sinDeclination))
        let phi = location.latitude * rad
        let cosHourAngle = (sin(-0.833 * rad) - sin(phi) * sinDeclination) / (cos(phi) * cosDeclination)
        if cosHourAngle > 1 { return .alwaysDown }
        if cosHourAngle < -1 { return .alwaysUp }
        let hourAngle = acos(cosHourAngle) / rad
        func date(_ jd: Double) -> Date { Date(timeIntervalSince1970: (jd - 2_440_587.5) * 86_400) }
        return .normal(sunrise: date(transit - hourAngle / 360), sunset: date(transit + hourAngle / 360))
    }
}
