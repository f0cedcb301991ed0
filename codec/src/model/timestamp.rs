use serde::{Deserialize, Serialize};

/// Microseconds since the Unix epoch: the unit of Bigtable cell timestamps and of every `now`
/// and deadline in rowkit's machines.
///
/// Tables are millisecond-granular (`spec/bigtable.md` 3): a written timestamp must be
/// non-negative and a multiple of 1000, or the marker [`Timestamp::SERVER_TIME`].
///
/// ```
/// use rowkit_codec::model::Timestamp;
/// let now = Timestamp(1_700_000_123_456);
/// assert_eq!(now.truncate_to_millis(), Timestamp(1_700_000_123_000));
/// assert!(Timestamp::from_millis(5).is_valid_cell_timestamp());
/// assert!(!Timestamp(5).is_valid_cell_timestamp());
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// `SetCell.timestamp_micros = -1`: "use the current server time", resolved by the store to
    /// its `now` truncated to milliseconds.
    pub const SERVER_TIME: Timestamp = Timestamp(-1);
    /// The Unix epoch; also what an unset `SetCell.timestamp_micros` means.
    pub const ZERO: Timestamp = Timestamp(0);
    /// The latest representable instant.
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// A timestamp `ms` milliseconds after the epoch (saturating).
    pub const fn from_millis(ms: i64) -> Timestamp {
        Timestamp(ms.saturating_mul(1000))
    }

    /// A timestamp `s` seconds after the epoch (saturating).
    pub const fn from_secs(s: i64) -> Timestamp {
        Timestamp(s.saturating_mul(1_000_000))
    }

    /// The microsecond value.
    pub const fn micros(self) -> i64 {
        self.0
    }

    /// Rounds down to a whole millisecond (towards negative infinity).
    pub const fn truncate_to_millis(self) -> Timestamp {
        Timestamp(self.0 - self.0.rem_euclid(1000))
    }

    /// Whether a store accepts this as an explicit cell timestamp: `>= 0` and a multiple of 1000.
    pub const fn is_valid_cell_timestamp(self) -> bool {
        self.0 >= 0 && self.0 % 1000 == 0
    }

    /// `self + micros`, saturating at the ends of the range.
    pub const fn saturating_add_micros(self, micros: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(micros))
    }
}
