//! Deterministic helpers shared by the checks.

/// A tiny xorshift generator: the fuzz input seeds it, so a chunking is a pure
/// function of the input and every finding replays exactly.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded from `seed` (zero is remapped).
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `1..=max` (`max >= 1`).
    pub fn size(&mut self, max: usize) -> usize {
        1 + (self.next_u64() % max.max(1) as u64) as usize
    }
}

/// Splits `data` into chunks of `1..=max` bytes chosen by `seed`.
pub fn chunks(data: &[u8], seed: u64, max: usize) -> Vec<&[u8]> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let take = rng.size(max).min(rest.len());
        let (head, tail) = rest.split_at(take);
        out.push(head);
        rest = tail;
    }
    out
}

/// A seed from up to eight bytes.
pub fn seed_of(bytes: &[u8]) -> u64 {
    let mut seed = [0u8; 8];
    let n = bytes.len().min(8);
    seed[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(seed)
}

/// A current-thread tokio runtime with a paused clock, one per thread: timers fire
/// as soon as every task is idle, so a deadline costs no wall-clock time.
pub fn with_runtime<T>(f: impl FnOnce(&tokio::runtime::Runtime) -> T) -> T {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a current-thread runtime");
    }
    RUNTIME.with(|rt| f(rt))
}

thread_local! {
    static PANICKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Records panics on this thread, including those tokio catches in tasks of a
/// current-thread runtime (which would otherwise vanish: the task just dies).
/// Returns whether one happened since the last call.
pub fn panicked_since_last_call() -> bool {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.with(|p| p.set(true));
            previous(info);
        }));
    });
    PANICKED.with(|p| p.replace(false))
}

/// Whether server-authored display text (a name, a label, a title, a URI) may not
/// hold `c`, as "Bound an untrusted server" writes the rules out: a control
/// character (Cc), a format character (Cf), U+2028/U+2029, or U+FFFD (what a lone
/// surrogate becomes once parsed).
pub fn forbidden_char(c: char) -> bool {
    c.is_control() || is_format(c) || c == '\u{2028}' || c == '\u{2029}' || c == '\u{FFFD}'
}

/// Unicode general category Cf (Unicode 16.0).
pub fn is_format(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}
