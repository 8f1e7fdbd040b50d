//! The IDs of one request, as every kind hands them to the transports: 64-bit IDs as runs
//! (a million consecutive IDs are a few words), text IDs as strings.

/// IDs `first, first + stride, ...` (`count` of them): how 64-bit IDs travel, so a batch of a
/// million consecutive IDs is a few words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRun {
    /// The first ID.
    pub first: u64,
    /// How many IDs (at least 1).
    pub count: u64,
    /// The difference between neighbours (1 unless striped or interleaved).
    pub stride: u64,
}

impl IdRun {
    /// The IDs in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + use<> {
        let IdRun {
            first,
            count,
            stride,
        } = *self;
        (0..count).map(move |k| first + k * stride)
    }
}

/// A batch of IDs from one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ids {
    /// 64-bit integer IDs as runs (snowflake, segment, ticket, plain counters, tso).
    Runs(Vec<IdRun>),
    /// IDs whose standard form is text (UUID, ULID, ObjectId, templated counters).
    Text(Vec<String>),
}

impl Ids {
    /// How many IDs.
    pub fn len(&self) -> u64 {
        match self {
            Ids::Runs(runs) => runs.iter().map(|r| r.count).sum(),
            Ids::Text(t) => t.len() as u64,
        }
    }

    /// True when there are none (never for a successful request).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `count` text IDs, each made by `make`; the first failure is the answer (nothing was
    /// handed out yet, so what was made before it is dropped).
    pub fn text<E>(count: u64, mut make: impl FnMut() -> Result<String, E>) -> Result<Self, E> {
        let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        for _ in 0..count {
            out.push(make()?);
        }
        Ok(Ids::Text(out))
    }

    /// Runs made of single values, merging neighbours one apart.
    pub fn from_values(values: impl IntoIterator<Item = u64>) -> Self {
        let mut runs: Vec<IdRun> = Vec::new();
        for v in values {
            match runs.last_mut() {
                Some(r) if r.stride == 1 && r.first + r.count == v => r.count += 1,
                _ => runs.push(IdRun {
                    first: v,
                    count: 1,
                    stride: 1,
                }),
            }
        }
        Ids::Runs(runs)
    }
}

impl Ids {
    /// The last ID when these are `n` IDs in one run of stride 1.
    pub fn last_of_one_run(&self, n: u64) -> Option<u64> {
        match self {
            Ids::Runs(runs) => match runs.as_slice() {
                [run] if run.count == n && run.stride == 1 => Some(run.first + (n - 1)),
                _ => None,
            },
            Ids::Text(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_run_of_stride_one_has_a_last() {
        let run = |first, count, stride| IdRun {
            first,
            count,
            stride,
        };
        let last = |ids: Ids, n| ids.last_of_one_run(n);
        assert_eq!(last(Ids::Runs(vec![run(5, 3, 1)]), 3), Some(7));
        assert_eq!(last(Ids::Runs(vec![run(5, 3, 2)]), 3), None);
        assert_eq!(last(Ids::Runs(vec![run(5, 2, 1)]), 3), None);
        assert_eq!(last(Ids::Runs(vec![run(5, 2, 1), run(9, 1, 1)]), 3), None);
        assert_eq!(last(Ids::Text(vec!["a".into()]), 1), None);
    }
}
