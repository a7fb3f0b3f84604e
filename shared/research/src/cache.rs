//! A small LRU whose entries expire: the 15-minute, 100-entry caches of web
//! search and page fetches (shared by every run the process serves).

use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct TtlCache<V: Clone> {
    ttl: Duration,
    entries: Mutex<lru::LruCache<String, (Instant, V)>>,
}

impl<V: Clone> TtlCache<V> {
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        let capacity = NonZeroUsize::new(capacity.max(1)).unwrap_or(NonZeroUsize::MIN);
        TtlCache { ttl, entries: Mutex::new(lru::LruCache::new(capacity)) }
    }

    /// A fresh entry (and marks it recently used); an expired one is dropped.
    pub fn get(&self, key: &str) -> Option<V> {
        let mut entries = self.entries.lock().ok()?;
        match entries.get(key) {
            Some((at, v)) if at.elapsed() < self.ttl => Some(v.clone()),
            Some(_) => {
                entries.pop(key);
                None
            }
            None => None,
        }
    }

    pub fn put(&self, key: String, value: V) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.put(key, (Instant::now(), value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_entries_leave_first_and_old_ones_expire() {
        let c = TtlCache::new(2, Duration::from_millis(80));
        c.put("a".into(), 1);
        c.put("b".into(), 2);
        assert_eq!(c.get("a"), Some(1));
        c.put("c".into(), 3);
        assert_eq!((c.get("a"), c.get("b"), c.get("c")), (Some(1), None, Some(3)));
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(c.get("a"), None);
    }
}
