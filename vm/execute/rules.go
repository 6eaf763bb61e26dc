package execute

// Rules says which scheduled changes of execution apply to one block
// (config.Upgrades, by the block's height). Every node derives them from the
// same schedule and height, so a change starts at the same block everywhere.
// A field is false until its change's height: the block executes exactly as
// the code before the change did.
type Rules struct {
	// LivenessGaps: the membership record keeps the rounds that had a block,
	// and a validator's grace counts only those (OpenMembership).
	LivenessGaps bool
}
