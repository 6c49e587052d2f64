//! Figures: each printed as one JSON line the moment it is measured, and all of them again
//! as a human table when the run ends.

use serde::Serialize;
use std::fmt::Write;

/// One measured number.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// The subcommand that measured it (`policy`, `gate`, …).
    pub bench: &'static str,
    /// What was measured: engine, size, backend (`airlock rules=1000 mixed`).
    pub case: String,
    /// The quantity (`p50`, `p99`, `throughput`, `faster_than_cedar_p50`, …).
    pub metric: String,
    pub value: f64,
    /// `ns`, `µs`, `ms`, `s`, `/s`, `bytes`, `x`, `count`.
    pub unit: &'static str,
}

/// Every figure of the run, in the order measured.
#[derive(Debug, Default)]
pub struct Report {
    figures: Vec<Figure>,
}

impl Report {
    /// Records a figure and prints its JSON line at once, so a long run shows progress
    /// and a killed run keeps what it measured.
    pub fn add(
        &mut self,
        bench: &'static str,
        case: impl Into<String>,
        metric: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) {
        let figure = Figure {
            bench,
            case: case.into(),
            metric: metric.into(),
            value,
            unit,
        };
        if let Ok(line) = serde_json::to_string(&figure) {
            println!("{line}");
        }
        self.figures.push(figure);
    }

    /// The value of an earlier figure, for ratios.
    pub fn value(&self, bench: &str, case: &str, metric: &str) -> Option<f64> {
        self.figures
            .iter()
            .rev()
            .find(|f| f.bench == bench && f.case == case && f.metric == metric)
            .map(|f| f.value)
    }

    /// The human table: one block per bench, one line per figure.
    pub fn table(&self) -> String {
        let case_width = self.figures.iter().map(|f| f.case.len()).max().unwrap_or(4);
        let metric_width = self
            .figures
            .iter()
            .map(|f| f.metric.len())
            .max()
            .unwrap_or(6);
        let mut out = String::new();
        let mut bench = "";
        for figure in &self.figures {
            if figure.bench != bench {
                bench = figure.bench;
                let _ = writeln!(out, "\n== {bench}");
                let _ = writeln!(
                    out,
                    "{:case_width$}  {:metric_width$}  {:>14}",
                    "case", "metric", "value"
                );
            }
            let _ = writeln!(
                out,
                "{:case_width$}  {:metric_width$}  {:>14} {}",
                figure.case,
                figure.metric,
                human(figure.value),
                figure.unit
            );
        }
        out
    }
}

/// A number with three significant digits and thousands separators.
fn human(value: f64) -> String {
    if value.abs() >= 1000.0 {
        let rounded = value.round() as i64;
        let digits = rounded.abs().to_string();
        let mut grouped = String::new();
        for (i, digit) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        if rounded < 0 {
            grouped.insert(0, '-');
        }
        grouped
    } else if value.abs() >= 100.0 || value == value.trunc() {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else if value.abs() >= 0.1 {
        format!("{value:.2}")
    } else {
        format!("{value:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn numbers_read_easily() {
        assert_eq!(human(1_234_567.8), "1,234,568");
        assert_eq!(human(512.3), "512");
        assert_eq!(human(12.34), "12.3");
        assert_eq!(human(1.234), "1.23");
        assert_eq!(human(3.0), "3");
        assert_eq!(human(0.0123), "1.23e-2");
    }
}
