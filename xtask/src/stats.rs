//! The statistics and number formatting every benchmark (`bench*.rs`) reports with: medians,
//! ratios, rates, milliseconds, and goals judged as they are printed.

use std::time::Duration;

/// The median of durations in any order (mean of the middle two for an even count; zero for
/// none).
pub(crate) fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let n = sorted.len();
    match n {
        0 => Duration::ZERO,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

/// The median of values in any order (mean of the middle two for an even count; 0 for none).
pub(crate) fn median_f64(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `a ÷ b` (finite for a zero `b`).
pub(crate) fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(f64::MIN_POSITIVE)
}

/// `count` per second over `elapsed` (finite for a zero `elapsed`).
pub(crate) fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
}

/// A duration in milliseconds.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Run times as the reports list them: sorted, in milliseconds to one decimal,
/// space-separated.
pub(crate) fn sorted_ms(times: &[Duration]) -> String {
    let mut sorted = times.to_vec();
    sorted.sort();
    let ms: Vec<String> = sorted.iter().map(|d| format!("{:.1}", ms(*d))).collect();
    ms.join(" ")
}

/// A goal for a ratio, stated to two decimals.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Goal {
    /// The ratio must not exceed this.
    AtMost(f64),
    /// The ratio must reach this.
    AtLeast(f64),
}

/// Whether `ratio`, rounded to two decimals as it is printed, meets `goal`.
pub(crate) fn goal_met(ratio: f64, goal: Goal) -> bool {
    let cents = |x: f64| (x * 100.0).round();
    match goal {
        Goal::AtMost(g) => cents(ratio) <= cents(g),
        Goal::AtLeast(g) => cents(ratio) >= cents(g),
    }
}

/// `"met"` or `"NOT met"`.
pub(crate) fn met(yes: bool) -> &'static str {
    if yes {
        "met"
    } else {
        "NOT met"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        let ms = Duration::from_millis;
        assert_eq!(median(&[ms(9), ms(1), ms(2)]), ms(2));
        assert_eq!(median(&[ms(1), ms(9), ms(5), ms(3)]), ms(4));
        assert_eq!(median(&[]), Duration::ZERO);
        assert_eq!(median_f64(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_f64(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median_f64(&[]), 0.0);
    }

    #[test]
    fn ratios_rates_and_milliseconds() {
        let ms_ = Duration::from_millis;
        assert_eq!(ratio(ms_(30), ms_(300)), 0.1);
        assert_eq!(ratio(ms_(25), ms_(100)), 0.25);
        assert!(ratio(ms_(1), Duration::ZERO).is_finite());
        assert_eq!(per_second(100, ms_(10)), 10_000.0);
        assert!(per_second(1, Duration::ZERO).is_finite());
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
        assert_eq!(
            sorted_ms(&[ms_(3), Duration::from_micros(1260), ms_(2)]),
            "1.3 2.0 3.0"
        );
    }

    #[test]
    fn goals_are_judged_to_two_decimals() {
        assert!(goal_met(1.004, Goal::AtMost(1.0)));
        assert!(!goal_met(1.006, Goal::AtMost(1.0)));
        assert!(goal_met(0.796, Goal::AtLeast(0.8)));
        assert!(!goal_met(0.794, Goal::AtLeast(0.8)));
        assert!(goal_met(3.0, Goal::AtLeast(0.8)));
        assert_eq!(met(true), "met");
        assert_eq!(met(false), "NOT met");
    }
}
