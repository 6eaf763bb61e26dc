// Package schainfiler is a SeaweedFS filer store on S-Chain: every filer
// entry is a versioned manifest, so that several filers share one store
// and the filer's exclusive creates and conditional writes are atomic
// across all of them. It is the new code of the weed patch's [schain]
// filer store (filer.toml): the patch copies this package (without its
// tests) into the SeaweedFS tree, where a small adapter implements
// filer.FilerStore on it; it imports only the standard library and the
// S-Chain client the patch copies too.
//
// How the filer's calls map onto S-Chain:
//
//   - An entry at dir/name is the manifest (bucket, dir + "\x00" + name):
//     a directory's entries are one key range, in name order, and a
//     subdirectory's are not in it; a directory or name containing NUL is
//     refused (ErrNULInPath), since its key would be another path's. The
//     filer's encoded entry is the manifest's attributes (opaque, at most
//     txLimits.maxAttributeBytes).
//     Its chunks whose keys S-Chain allocated (the masters run the schain
//     sequencer with key_prefix as schain_prefix) are the manifest's
//     chunks, bound to it; they move with the entry (a rename, a multipart
//     completion adopts them), and an overwrite or deletion releases what
//     it drops. Of more chunks than a manifest binds, the first
//     txLimits.maxChunks are bound, and a write that would unbind one the
//     entry still names is refused (ErrTooManyChunks; keepBound).
//   - A deletion is a tombstone; listing skips tombstones.
//   - A directory listing is a listManifests page of the directory's range.
//   - The filer's KV calls are manifests of the reserved bucket
//     <bucket>.kv, keyed by the key's hex.
//   - Reads and writes go to the bucket's owner, which answers a write once
//     it accepted it: every filer reads every write another acknowledged.
//   - A request the filer server marks (Guard: an exclusive create, a
//     conditional write) turns the filer's read-then-write of that path
//     into one conditional manifest write: the version the check read (or
//     "absent") is the write's precondition, so a write another filer
//     made in between refuses it (Refused) instead of being overwritten.
//
// Store transactions are not atomic (as with the etcd store): each write
// commits on its own.
package schainfiler
