//! Values made once per label set and found again by a borrowed name, so recording a metric
//! on a request allocates nothing and builds no label set after its first time.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

/// Values by a name (a generator, a route) and a small second key (a kind, a method and
/// status): the names go in a hash map looked up by `&str`, the few second keys of one name
/// in a list searched in order.
#[derive(Debug)]
pub struct Handles<K, V> {
    by_name: RwLock<ByName<K, V>>,
}

type ByName<K, V> = HashMap<Box<str>, Vec<(K, V)>>;

impl<K, V> Default for Handles<K, V> {
    fn default() -> Self {
        Self {
            by_name: RwLock::default(),
        }
    }
}

impl<K: PartialEq + Copy, V> Handles<K, V> {
    /// `f` applied to the value of `(name, key)`, made by `make` the first time. The common
    /// case takes a read lock only; the write lock is taken once per new label set.
    pub fn with<R>(
        &self,
        name: &str,
        key: K,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> R {
        {
            let by_name = self.by_name.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(value) = find(by_name.get(name), key) {
                return f(value);
            }
        }
        let mut by_name = self.by_name.write().unwrap_or_else(PoisonError::into_inner);
        // Most names have one key (a generator's kind): room for one, not the default four,
        // since there is an entry per segment tag.
        let list = by_name
            .entry(name.into())
            .or_insert_with(|| Vec::with_capacity(1));
        // Another request may have made it between the two locks.
        let at = match list.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                list.push((key, make()));
                list.len() - 1
            }
        };
        f(&list[at].1)
    }

    /// Calls `f` on every name, key and value, in no particular order.
    pub fn for_each(&self, mut f: impl FnMut(&str, K, &V)) {
        let by_name = self.by_name.read().unwrap_or_else(PoisonError::into_inner);
        for (name, list) in by_name.iter() {
            for (key, value) in list {
                f(name, *key, value);
            }
        }
    }
}

fn find<K: PartialEq, V>(list: Option<&Vec<(K, V)>>, key: K) -> Option<&V> {
    list?.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_value_is_made_once_per_name_and_key() {
        let handles: Handles<u8, AtomicU64> = Handles::default();
        let mut made = 0;
        for (name, key) in [("a", 1), ("a", 1), ("a", 2), ("b", 1), ("a", 1)] {
            handles.with(
                name,
                key,
                || {
                    made += 1;
                    AtomicU64::new(0)
                },
                |v| v.fetch_add(1, Ordering::Relaxed),
            );
        }
        assert_eq!(made, 3, "one value per (name, key)");
        let mut seen = Vec::new();
        handles
            .for_each(|name, key, v| seen.push((name.to_string(), key, v.load(Ordering::Relaxed))));
        seen.sort();
        assert_eq!(
            seen,
            [
                ("a".to_string(), 1, 3),
                ("a".to_string(), 2, 1),
                ("b".to_string(), 1, 1)
            ]
        );
    }
}
