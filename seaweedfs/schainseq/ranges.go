package schainseq

import "strconv"

// KeyRange is the range volume vid's file keys come from: one range per
// band of band consecutive volume ids.
func KeyRange(prefix string, vid, band uint32) string {
	return prefix + "/keys/" + strconv.FormatUint(uint64(vid/max(band, 1)), 10)
}

// VolumeRange is the range volume ids come from.
func VolumeRange(prefix string) string { return prefix + "/volumes" }

// KeyFloorRange's counter is the cutover floor of file keys: every S-Chain
// file key is at least its next id. Cutover raises it with allocate{floor};
// it never moves down.
func KeyFloorRange(prefix string) string { return prefix + "/floor/keys" }

// VolumeFloorRange's counter is the cutover floor of volume ids.
func VolumeFloorRange(prefix string) string { return prefix + "/floor/volumes" }
