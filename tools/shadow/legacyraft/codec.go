package legacyraft

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Command kinds; the first byte of every raft log entry this package writes.
const (
	cmdAllocate    byte = 1
	cmdMaxVolumeID byte = 2
)

var (
	errShortCommand = errors.New("short command")
	errBadCommand   = errors.New("unknown command")
	errTrailing     = errors.New("trailing bytes in command")
)

// allocRecord is one allocation inside a batched raft log entry.
type allocRecord struct {
	rangeKey string
	count    uint64
}

// encodeAllocBatch encodes records as cmdAllocate, then per record
// uvarint(len(range)) | range | uvarint(count).
func encodeAllocBatch(records []allocRecord) []byte {
	size := 1 + binary.MaxVarintLen64
	for _, r := range records {
		size += 2*binary.MaxVarintLen64 + len(r.rangeKey)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, cmdAllocate)
	buf = binary.AppendUvarint(buf, uint64(len(records)))
	for _, r := range records {
		buf = binary.AppendUvarint(buf, uint64(len(r.rangeKey)))
		buf = append(buf, r.rangeKey...)
		buf = binary.AppendUvarint(buf, r.count)
	}
	return buf
}

func decodeAllocBatch(buf []byte) ([]allocRecord, error) {
	if len(buf) == 0 || buf[0] != cmdAllocate {
		return nil, errBadCommand
	}
	rest := buf[1:]
	n, rest, err := readUvarint(rest)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(rest)) { // every record needs at least one byte
		return nil, errShortCommand
	}
	records := make([]allocRecord, 0, n)
	for i := uint64(0); i < n; i++ {
		var l, count uint64
		if l, rest, err = readUvarint(rest); err != nil {
			return nil, err
		}
		if l > uint64(len(rest)) {
			return nil, errShortCommand
		}
		key := string(rest[:l])
		if count, rest, err = readUvarint(rest[l:]); err != nil {
			return nil, err
		}
		records = append(records, allocRecord{rangeKey: key, count: count})
	}
	if len(rest) != 0 {
		return nil, errTrailing
	}
	return records, nil
}

func encodeMaxVolumeID(id uint64) []byte {
	return binary.AppendUvarint([]byte{cmdMaxVolumeID}, id)
}

func decodeMaxVolumeID(buf []byte) (uint64, error) {
	if len(buf) == 0 || buf[0] != cmdMaxVolumeID {
		return 0, errBadCommand
	}
	id, rest, err := readUvarint(buf[1:])
	if err != nil {
		return 0, err
	}
	if len(rest) != 0 {
		return 0, errTrailing
	}
	return id, nil
}

func readUvarint(buf []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(buf)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: bad uvarint", errShortCommand)
	}
	return v, buf[n:], nil
}
