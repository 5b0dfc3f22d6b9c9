//! Reading an object selectively: which of its members to keep
//! ([`MemberSelection`], names given as data by the caller) and the values kept,
//! by position ([`SelectedMembers`]).
//!
//! The envelope reader (`envelope.rs`) fills a [`SelectedMembers`] while it scans
//! a `result` object, building only the selected members; [`MemberSelection::select`]
//! does the same from an object already built, and is the reference the selective
//! read is tested against. This module gives no name a meaning: the caller's list
//! is the only place the names are written.

use serde_json::{Map, Value};

use super::parse::decode_string;

/// The most members one [`MemberSelection`] names.
pub const MAX_SELECTED_MEMBERS: usize = 8;

/// The members of an object to keep: at most [`MAX_SELECTED_MEMBERS`] distinct
/// names, compared with each key after its escapes are decoded (`"cont\u0065nt"`
/// is `content`). Built once, in a `static`, by the caller that reads them.
#[derive(Debug)]
pub struct MemberSelection {
    names: &'static [&'static str],
    /// Bit `n` set: some name is `n` bytes long (names of 64 bytes or more set
    /// bit 63, as every key that long is compared). Most keys that are not
    /// selected are refused on their length alone.
    lengths: u64,
    /// Each name's [`fingerprint`], by position: a key is compared in full only
    /// with the names whose fingerprint it has.
    fingerprints: [u32; MAX_SELECTED_MEMBERS],
}

impl PartialEq for MemberSelection {
    fn eq(&self, other: &MemberSelection) -> bool {
        self.names == other.names
    }
}

impl Eq for MemberSelection {}

impl MemberSelection {
    /// A selection of `names`, in that order: [`SelectedMembers::get`] takes the
    /// index of a name in this list.
    ///
    /// # Panics
    ///
    /// When `names` has more than [`MAX_SELECTED_MEMBERS`] entries or names a
    /// member twice (at compile time, in a `static`).
    pub const fn new(names: &'static [&'static str]) -> MemberSelection {
        assert!(
            names.len() <= MAX_SELECTED_MEMBERS,
            "a MemberSelection names at most MAX_SELECTED_MEMBERS members"
        );
        let mut lengths = 0u64;
        let mut fingerprints = [0; MAX_SELECTED_MEMBERS];
        let mut i = 0;
        while i < names.len() {
            let mut j = 0;
            while j < i {
                assert!(
                    !same_bytes(names[i].as_bytes(), names[j].as_bytes()),
                    "a MemberSelection names a member twice"
                );
                j += 1;
            }
            lengths |= length_bit(names[i].len());
            fingerprints[i] = fingerprint(names[i].as_bytes());
            i += 1;
        }
        MemberSelection {
            names,
            lengths,
            fingerprints,
        }
    }

    /// The names, in order.
    pub fn names(&self) -> &'static [&'static str] {
        self.names
    }

    /// The index of a decoded key, if it is selected.
    #[inline]
    pub(super) fn position(&self, key: &[u8]) -> Option<usize> {
        if self.lengths & length_bit(key.len()) == 0 {
            return None;
        }
        let print = fingerprint(key);
        (0..self.names.len()).find(|&index| {
            self.fingerprints[index] == print && key_equals(self.names[index].as_bytes(), key)
        })
    }

    /// The index of a validated raw key (escapes intact), if it is selected.
    #[inline]
    pub(super) fn position_raw(&self, raw: &[u8], escaped: bool) -> Option<usize> {
        if escaped {
            self.position(decode_string(raw, true).as_bytes())
        } else {
            self.position(raw)
        }
    }

    /// The selected members of an object already built (the others are dropped):
    /// what the selective read builds, from a whole value.
    pub fn select(&'static self, object: Map<String, Value>) -> SelectedMembers {
        let mut selected = SelectedMembers::new(self);
        for (key, value) in object {
            if let Some(index) = self.position(key.as_bytes()) {
                selected.values[index] = Some(value);
            }
        }
        selected
    }
}

/// `a == b`, without a call for the usual short keys:
/// up to 16 bytes, two overlapping word loads from each.
#[inline]
fn key_equals(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap_or([0; 4]));
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => a == b,
    }
}

/// `a == b`, in a `const fn`.
const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A name's or key's length, first byte and last byte, packed: most names of one
/// length differ in one of their ends (`content`, `isError`).
#[inline]
const fn fingerprint(bytes: &[u8]) -> u32 {
    match bytes {
        [] => 0,
        [first, .., last] => {
            (bytes.len() as u32 & 0xFFFF) | (*first as u32) << 16 | (*last as u32) << 24
        }
        [only] => 1 | (*only as u32) << 16 | (*only as u32) << 24,
    }
}

/// The bit of [`MemberSelection::lengths`] for a name or key of `len` bytes.
#[inline]
const fn length_bit(len: usize) -> u64 {
    1 << if len < 63 { len } else { 63 }
}

/// The values of the members a [`MemberSelection`] names, each built exactly as
/// [`parse_value`] builds it, indexed like the selection's names: no map, no
/// keys. A member the object gave twice holds the last value, as in a map.
///
/// The values are boxed: the members travel by value from the reader to the
/// caller (envelope, reply, request slot, the caller's future).
/// Chosen for speed: `docs/benchmarks-notebook.md`, "The session in three layers, the sealed transport".
///
/// [`parse_value`]: super::parse_value
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedMembers {
    selection: &'static MemberSelection,
    values: Box<[Option<Value>; MAX_SELECTED_MEMBERS]>,
}

impl SelectedMembers {
    /// None of the members of `selection`.
    pub(super) fn new(selection: &'static MemberSelection) -> SelectedMembers {
        SelectedMembers {
            selection,
            values: Default::default(),
        }
    }

    /// The selection these members were read with.
    pub fn selection(&self) -> &'static MemberSelection {
        self.selection
    }

    /// Whether these members were read with `selection` (the same list of names).
    pub fn is(&self, selection: &MemberSelection) -> bool {
        std::ptr::eq(self.selection, selection) || self.selection == selection
    }

    /// The value of the selection's `index`th name, when the object had it.
    pub fn get(&self, index: usize) -> Option<&Value> {
        self.values.get(index)?.as_ref()
    }

    /// Takes the value of the selection's `index`th name.
    pub fn take(&mut self, index: usize) -> Option<Value> {
        self.values.get_mut(index)?.take()
    }

    /// The slot of the selection's `index`th name, for the reader.
    pub(super) fn slot(&mut self, index: usize) -> &mut Option<Value> {
        &mut self.values[index]
    }

    /// An object holding just these members, keyed by the selection's names.
    pub fn into_object(self) -> Map<String, Value> {
        let mut object = Map::new();
        for (name, value) in self.selection.names.iter().zip(*self.values) {
            if let Some(value) = value {
                object.insert((*name).to_owned(), value);
            }
        }
        object
    }
}
