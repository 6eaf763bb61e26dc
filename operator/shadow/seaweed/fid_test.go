package seaweed

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseFileID(t *testing.T) {
	tests := []struct {
		fid     string
		want    FileID
		wantErr error
	}{
		{fid: "3,01637037d6", want: FileID{Volume: 3, Key: 1, Cookie: 0x637037d6}},
		{fid: "4294967295,ff00000000", want: FileID{Volume: 1<<32 - 1, Key: 0xff, Cookie: 0}},
		{fid: "7,1a2b3c4d5e6f708192a3b4c5", want: FileID{Volume: 7, Key: 0x1a2b3c4d5e6f7081, Cookie: 0x92a3b4c5}},
		{fid: "12,123456789a", want: FileID{Volume: 12, Key: 0x12, Cookie: 0x3456789a}},
		{fid: "1,1deadbeef", want: FileID{Volume: 1, Key: 1, Cookie: 0xdeadbeef}}, // odd length: accepted, not canonical
		{fid: "", wantErr: ErrFidFormat},
		{fid: "3", wantErr: ErrFidFormat},
		{fid: "3;01637037d6", wantErr: ErrFidFormat},
		{fid: "3,637037d6", wantErr: ErrFidFormat},
		{fid: "3,", wantErr: ErrFidFormat},
		{fid: "4294967295,1234567890abcdef1234567890abcdef", wantErr: ErrFidFormat},
		{fid: "1,1234567890abcdef1234567890abcdef", wantErr: ErrFidKey},
		{fid: ",01637037d6", wantErr: ErrFidVolume},
		{fid: "0,01637037d6", wantErr: ErrFidVolume},
		{fid: "03,01637037d6", wantErr: ErrFidVolume},
		{fid: "+3,01637037d6", wantErr: ErrFidVolume},
		{fid: "4294967296,01637037d6", wantErr: ErrFidVolume},
		{fid: "3,00637037d6", wantErr: ErrFidKey},
		{fid: "3,0x637037d6", wantErr: ErrFidKey},
		{fid: "3,G1637037d6", wantErr: ErrFidKey},
		{fid: "3,A1637037d6", wantErr: ErrFidKey},
		{fid: "3,1234567890abcdef0637037d6", wantErr: ErrFidKey},
		{fid: "3,01637037D6", wantErr: ErrFidCookie},
		{fid: "3,01637037d6_1", wantErr: ErrFidCookie},
		{fid: "3,01,37037d6", wantErr: ErrFidCookie},
	}
	for _, tt := range tests {
		t.Run(tt.fid, func(t *testing.T) {
			require := require.New(t)
			got, err := ParseFileID(tt.fid)
			require.ErrorIs(err, tt.wantErr)
			require.Equal(tt.want, got)
		})
	}
}

func TestFileIDStringIsMasterFormat(t *testing.T) {
	require := require.New(t)
	require.Equal("3,01637037d6", FileID{Volume: 3, Key: 1, Cookie: 0x637037d6}.String())
	require.Equal("9,0100000000", FileID{Volume: 9, Key: 1}.String())
	require.Equal("1,ffffffffffffffffffffffff", FileID{Volume: 1, Key: ^uint64(0), Cookie: ^uint32(0)}.String())
}

func FuzzParseFileID(f *testing.F) {
	for _, s := range []string{"3,01637037d6", "1,1deadbeef", "4294967295,ffffffffffffffffffffffff", "0,0", "3,01637037d6_1", "03,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fid, err := ParseFileID(s)
		if err != nil {
			require.Equal(t, FileID{}, fid)
			return
		}
		require.NotZero(t, fid.Volume)
		require.NotZero(t, fid.Key)
		canonical := fid.String()
		require.LessOrEqual(t, len(canonical), len(s)+1, "canonical form is never longer but for one dropped leading zero")
		again, err := ParseFileID(canonical)
		require.NoError(t, err)
		require.Equal(t, fid, again)
	})
}

func FuzzFileIDRoundTrip(f *testing.F) {
	f.Add(uint32(3), uint64(1), uint32(0x637037d6))
	f.Add(uint32(1<<32-1), ^uint64(0), uint32(0))
	f.Fuzz(func(t *testing.T, volume uint32, key uint64, cookie uint32) {
		if volume == 0 || key == 0 {
			t.Skip("never issued")
		}
		want := FileID{Volume: volume, Key: key, Cookie: cookie}
		got, err := ParseFileID(want.String())
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}
