package execute

// Rules says which scheduled changes of execution apply to one block
// (config.Upgrades, by the block's height). Every node derives them from the
// same schedule and height, so a change starts at the same block everywhere.
// A field is false until its change's height: the block executes exactly as
// the code before the change did.
type Rules struct {
	// Manifests: ManifestTx and ReclaimTx (versions, preconditions, chunk
	// binding, released lists) instead of PutManifestTx.
	Manifests bool
}
