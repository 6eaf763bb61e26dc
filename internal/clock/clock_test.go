package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Unix(1000, 0)

func fired(c <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-c:
		return at, true
	default:
		return time.Time{}, false
	}
}

// TestManualTimers: a timer fires once its time is reached, not before,
// at its own time; Stop disarms, Reset re-arms.
func TestManualTimers(t *testing.T) {
	require := require.New(t)
	m := NewManual(t0)
	a := m.NewTimer(2 * time.Second)
	b := m.NewTimer(time.Second)
	require.Equal(2, m.Waiting())
	next, ok := m.Next()
	require.True(ok)
	require.Equal(t0.Add(time.Second), next)

	m.Advance(999 * time.Millisecond)
	_, ok = fired(b.C())
	require.False(ok, "not yet")
	m.Advance(time.Millisecond)
	at, ok := fired(b.C())
	require.True(ok)
	require.Equal(t0.Add(time.Second), at)
	require.Equal(1, m.Waiting())

	require.True(a.Stop())
	m.Advance(time.Hour)
	_, ok = fired(a.C())
	require.False(ok, "stopped")
	require.False(a.Reset(time.Second))
	m.Advance(time.Second)
	_, ok = fired(a.C())
	require.True(ok, "reset")

	now := m.NewTimer(0)
	_, ok = fired(now.C())
	require.True(ok, "a timer of 0 fires at once")
	m.Set(t0)
	require.Equal(t0.Add(time.Hour+time.Second+time.Second), m.Now(), "the clock never goes back")
}

// TestManualTicker: a ticker fires every period; a tick not read is
// dropped, as time's are.
func TestManualTicker(t *testing.T) {
	require := require.New(t)
	m := NewManual(t0)
	tk := m.NewTicker(100 * time.Millisecond)
	m.Advance(100 * time.Millisecond)
	at, ok := fired(tk.C())
	require.True(ok)
	require.Equal(t0.Add(100*time.Millisecond), at)
	m.Advance(350 * time.Millisecond)
	at, ok = fired(tk.C())
	require.True(ok)
	require.Equal(t0.Add(200*time.Millisecond), at, "the first unread tick is kept, the later ones dropped")
	_, ok = fired(tk.C())
	require.False(ok)
	tk.Stop()
	m.Advance(time.Second)
	_, ok = fired(tk.C())
	require.False(ok)
	require.Zero(m.Waiting())
}

// TestAwaitWaiting: a test can wait until a goroutine sleeps on the clock.
func TestAwaitWaiting(t *testing.T) {
	m := NewManual(t0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-m.NewTimer(time.Minute).C()
	}()
	require.True(t, m.AwaitWaiting(1, 5*time.Second))
	m.Advance(time.Minute)
	<-done
	require.False(t, m.AwaitWaiting(1, time.Millisecond))
}

// TestReal: the real clock's timers fire.
func TestReal(t *testing.T) {
	c := Real()
	require.WithinDuration(t, time.Now(), c.Now(), time.Second)
	<-c.NewTimer(time.Millisecond).C()
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
}
