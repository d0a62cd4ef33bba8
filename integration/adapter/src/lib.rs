//! reth-hybrid behind reth's storage traits.
