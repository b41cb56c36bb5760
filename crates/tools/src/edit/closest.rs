//! The region of a file most like an `old_string` that matched nowhere, so
//! that the error can show the model what the file really says there.
//!
//! Similarity of two lines is the Dice coefficient of their character
//! bigrams (leading and trailing whitespace ignored); a window's similarity
//! is the mean over its lines. Work is bounded: at most [`MAX_OLD_LINES`]
//! lines of `old_string` take part, each file line is cut to
//! [`MAX_LINE_CHARS`] for scoring, and a file too large for
//! [`MAX_PAIRS`] line comparisons gets no candidate.

const MAX_OLD_LINES: usize = 30;
const MAX_LINE_CHARS: usize = 300;
const MAX_PAIRS: usize = 4_000_000;
/// Below this, nothing is shown: a weak candidate misleads more than it helps.
pub(crate) const MIN_SIMILARITY: f64 = 0.5;

/// The best window found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    /// 1-based number of the window's first line.
    pub first_line: usize,
    /// The file's lines in the window (at most [`MAX_OLD_LINES`]).
    pub lines: Vec<String>,
    /// 0 to 1.
    pub similarity: f64,
    /// The first line that differs: its number, the file's text, the model's.
    pub first_difference: Option<(usize, String, String)>,
}

/// The window of `file` most like `old`, if any is at least
/// [`MIN_SIMILARITY`] alike.
pub(crate) fn closest(file: &[&str], old: &[String]) -> Option<Candidate> {
    let old: Vec<&str> = old.iter().map(String::as_str).take(MAX_OLD_LINES).collect();
    if file.is_empty() || old.is_empty() || file.len().saturating_mul(old.len()) > MAX_PAIRS {
        return None;
    }
    let old_grams: Vec<Vec<u64>> = old.iter().map(|l| bigrams(l)).collect();
    let k = old.len().min(file.len());
    let mut best: Option<(usize, f64)> = None;
    // scores[i][j]: file line i against old line j; only the diagonals a
    // window uses are needed, so keep one row per file line.
    let rows: Vec<Vec<f32>> = file
        .iter()
        .map(|line| {
            let grams = bigrams(line);
            old_grams.iter().map(|o| dice(&grams, o) as f32).collect()
        })
        .collect();
    for start in 0..=file.len() - k {
        let total: f64 = (0..k).map(|j| f64::from(rows[start + j][j])).sum();
        let score = total / k as f64;
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((start, score));
        }
    }
    let (start, similarity) = best?;
    if similarity < MIN_SIMILARITY {
        return None;
    }
    let first_difference = (0..k)
        .find(|&j| file[start + j] != old[j])
        .map(|j| (start + j + 1, file[start + j].to_owned(), old[j].to_owned()));
    Some(Candidate {
        first_line: start + 1,
        lines: file[start..start + k]
            .iter()
            .map(|l| (*l).to_owned())
            .collect(),
        similarity,
        first_difference,
    })
}

/// The sorted character bigrams of `line`, trimmed and cut.
fn bigrams(line: &str) -> Vec<u64> {
    let chars: Vec<char> = line.trim().chars().take(MAX_LINE_CHARS).collect();
    let mut grams: Vec<u64> = chars
        .windows(2)
        .map(|w| (u64::from(w[0]) << 32) | u64::from(w[1]))
        .collect();
    if grams.is_empty() {
        // One character (or none) is its own gram, so equal short lines match.
        grams.extend(chars.first().map(|&c| u64::from(c)));
    }
    grams.sort_unstable();
    grams
}

fn dice(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn finds_the_most_similar_window_and_its_first_difference() {
        let file = [
            "fn main() {",
            "    let total = 1;",
            "    println!(\"{total}\");",
            "}",
        ];
        let old = strings(&["    let totl = 1;", "    println!(\"{total}\");"]);
        let found = closest(&file, &old).unwrap();
        assert_eq!(found.first_line, 2);
        assert_eq!(found.lines, [file[1], file[2]]);
        assert!(found.similarity > 0.8, "{}", found.similarity);
        assert_eq!(
            found.first_difference,
            Some((2, file[1].to_owned(), old[0].clone()))
        );
    }

    #[test]
    fn unrelated_text_has_no_candidate() {
        let file = ["alpha beta", "gamma delta"];
        assert_eq!(closest(&file, &strings(&["zzz qqq xxx"])), None);
        assert_eq!(closest(&[], &strings(&["a"])), None);
    }

    #[test]
    fn dice_of_equal_and_disjoint_lines() {
        assert_eq!(dice(&bigrams("  abc "), &bigrams("abc")), 1.0);
        assert_eq!(dice(&bigrams("ab"), &bigrams("cd")), 0.0);
        assert_eq!(dice(&bigrams(""), &bigrams("")), 1.0);
        assert_eq!(dice(&bigrams("x"), &bigrams("x")), 1.0);
    }
}
