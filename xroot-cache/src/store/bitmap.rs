//! A set of blocks as a bitmap: block `i` is bit `i % 64` of word `i / 64`,
//! the layout of the sidecar's block bitmap (`store/sidecar.rs`).

/// A set of block numbers, as many words as the highest block set needs
/// (or as it was made with).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Bitmap {
    words: Vec<u64>,
}

impl Bitmap {
    /// The set whose words are `words`.
    pub(crate) fn from_words(words: Vec<u64>) -> Bitmap {
        Bitmap { words }
    }

    /// The words, block `i` being bit `i % 64` of word `i / 64`.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    /// Whether block `i` is in the set.
    pub(crate) fn get(&self, i: u64) -> bool {
        usize::try_from(i / 64)
            .ok()
            .and_then(|w| self.words.get(w))
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Puts block `i` in the set (`on`) or takes it out. Putting one past
    /// the words adds words up to it; taking one out that is past them
    /// changes nothing.
    pub(crate) fn set(&mut self, i: u64, on: bool) {
        let Ok(word) = usize::try_from(i / 64) else {
            return;
        };
        let mask = 1 << (i % 64);
        match self.words.get_mut(word) {
            Some(w) if on => *w |= mask,
            Some(w) => *w &= !mask,
            None if on => {
                self.words.resize(word + 1, 0);
                self.words[word] = mask;
            }
            None => {}
        }
    }

    /// How many blocks are in the set.
    pub(crate) fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::Bitmap;

    #[test]
    fn set_grows_only_to_put_a_block_in() {
        let mut b = Bitmap::default();
        b.set(130, false);
        assert!(b.words().is_empty());
        b.set(130, true);
        assert_eq!(b.words(), &[0, 0, 1 << 2]);
        assert!(b.get(130) && !b.get(129) && !b.get(131) && !b.get(u64::MAX));
        b.set(0, true);
        assert_eq!(b.count(), 2);
        b.set(130, false);
        assert_eq!((b.count(), b.get(130), b.get(0)), (1, false, true));
    }
}
