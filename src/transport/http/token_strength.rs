//! How hard a bearer token is to guess: the entropy estimate behind the off-loopback rule of
//! the static token (`MCP_AUTH_TOKEN`).
//!
//! Invariant: the estimate is conservative — the smaller of a character-statistics bound and
//! zxcvbn's guess count — so a patterned token never passes as random.

/// Least estimated entropy of a bearer token when `MCP_HOST` is not a loopback address.
pub const MIN_TOKEN_BITS_OFF_LOOPBACK: f64 = 128.0;

/// A conservative estimate of a token's entropy in bits: the smaller of [`character_bits`]
/// and what the `zxcvbn` estimator (dictionary words, sequences, keyboard walks, repeats)
/// says an attacker needs in guesses. `correcthorsebatterystaple1234567`, the alphabet
/// followed by digits and a repeated hex run all score far below 128; `openssl rand -hex 32`
/// stays above it.
pub fn estimated_entropy_bits(token: &str) -> f64 {
    // zxcvbn counts guesses in a u64, so it saturates near 64 bits: below that it has found
    // a pattern an attacker would try (and its count is the estimate); at the bound it found
    // none and the character estimate decides. Its cost grows with length, so a long token's
    // first 100 characters decide whether it is a pattern.
    let head: String = token.chars().take(100).collect();
    let guessed = zxcvbn::zxcvbn(&head, &[]).guesses_log10() * std::f64::consts::LOG2_10;
    if guessed < ZXCVBN_SATURATED_BITS {
        guessed.min(character_bits(token))
    } else {
        character_bits(token)
    }
}

/// Where zxcvbn's u64 guess count stops meaning anything (2^64 guesses, less a margin).
const ZXCVBN_SATURATED_BITS: f64 = 60.0;

/// Length times the smaller of the per-character Shannon entropy of the token's own
/// characters and the size of the character classes it uses. Repetition (`aaaa…`) scores near
/// zero; `openssl rand -hex 32` scores about 240.
pub fn character_bits(token: &str) -> f64 {
    let chars: Vec<char> = token.chars().collect();
    if chars.is_empty() {
        return 0.0;
    }
    let total = chars.len() as f64;
    let mut counts: std::collections::HashMap<char, usize> = std::collections::HashMap::new();
    for c in &chars {
        *counts.entry(*c).or_default() += 1;
    }
    let shannon: f64 = counts
        .values()
        .map(|&n| {
            let p = n as f64 / total;
            -p * p.log2()
        })
        .sum();
    let classes = [
        (chars.iter().any(char::is_ascii_lowercase), 26.0),
        (chars.iter().any(char::is_ascii_uppercase), 26.0),
        (chars.iter().any(char::is_ascii_digit), 10.0),
        (chars.iter().any(|c| !c.is_ascii_alphanumeric()), 33.0),
    ];
    let alphabet: f64 = classes
        .iter()
        .filter(|(used, _)| *used)
        .map(|(_, n)| n)
        .sum();
    total * shannon.min(alphabet.log2())
}
