//! Patterns for indexed parameter families (`net0`…`net31`, `scsi0`…`scsi30`, `mp0`…).
//!
//! Invariant: the pattern a family advertises in `patternProperties` is the one that
//! validation applies, built here from the row's index range — so `net31` is accepted
//! and `net32`, `net05` or `net` are not, on both sides.

/// `^<prefix>(<alternatives for lo..=hi>)$`, e.g. `^net([0-9]|[1-2][0-9]|3[0-1])$`.
pub fn family_pattern(prefix: &str, lo: u16, hi: u16) -> String {
    let mut parts = Vec::new();
    let mut start = lo;
    while start <= hi {
        // Split at digit-length boundaries (9, 99, 999, …) so each piece has one width.
        let width_max = 10u32.pow(digits(start)) - 1;
        let end = hi.min(u16::try_from(width_max).unwrap_or(u16::MAX));
        parts.extend(same_width(&start.to_string(), &end.to_string()));
        if end == u16::MAX {
            break;
        }
        start = end + 1;
    }
    format!("^{}({})$", regex_escape(prefix), parts.join("|"))
}

fn digits(n: u16) -> u32 {
    n.checked_ilog10().unwrap_or(0) + 1
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = !c.is_ascii_alphanumeric() && c != '_';
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

fn class(a: u8, b: u8) -> String {
    if a == b {
        (a as char).to_string()
    } else {
        format!("[{}-{}]", a as char, b as char)
    }
}

/// Alternatives matching exactly the numbers `lo..=hi`, both written with the same width.
fn same_width(lo: &str, hi: &str) -> Vec<String> {
    let (l, h) = (lo.as_bytes(), hi.as_bytes());
    if l.len() == 1 {
        return vec![class(l[0], h[0])];
    }
    let rest = l.len() - 1;
    let any = |n: usize| "[0-9]".repeat(n);
    if l[0] == h[0] {
        return same_width(&lo[1..], &hi[1..])
            .into_iter()
            .map(|tail| format!("{}{tail}", l[0] as char))
            .collect();
    }
    let low_full = lo[1..].bytes().all(|b| b == b'0');
    let high_full = hi[1..].bytes().all(|b| b == b'9');
    let mut out = Vec::new();
    let first = if low_full { l[0] } else { l[0] + 1 };
    let last = if high_full { h[0] } else { h[0] - 1 };
    if !low_full {
        let nines = "9".repeat(rest);
        out.extend(
            same_width(&lo[1..], &nines)
                .into_iter()
                .map(|tail| format!("{}{tail}", l[0] as char)),
        );
    }
    if first <= last {
        out.push(format!("{}{}", class(first, last), any(rest)));
    }
    if !high_full {
        let zeros = "0".repeat(rest);
        out.extend(
            same_width(&zeros, &hi[1..])
                .into_iter()
                .map(|tail| format!("{}{tail}", h[0] as char)),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    #[test]
    fn patterns_accept_exactly_the_range() {
        for (lo, hi) in [
            (0, 31),
            (0, 30),
            (0, 15),
            (0, 5),
            (0, 3),
            (0, 255),
            (1, 9),
            (0, 9),
            (7, 120),
        ] {
            let re = Regex::new(&family_pattern("net", lo, hi)).unwrap();
            for n in 0..400u16 {
                assert_eq!(
                    re.is_match(&format!("net{n}")),
                    (lo..=hi).contains(&n),
                    "{lo}..={hi}: {n}"
                );
            }
            assert!(!re.is_match("net"));
            assert!(!re.is_match("net05"));
            assert!(!re.is_match("xnet1"));
        }
        assert_eq!(
            family_pattern("net", 0, 31),
            "^net([0-9]|[1-2][0-9]|3[0-1])$"
        );
    }
}
