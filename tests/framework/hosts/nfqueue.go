package hosts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The nfnetlink_queue protocol (linux/netfilter/nfnetlink_queue.h): a
// packet that an iptables NFQUEUE rule queues is held by the kernel until
// the process bound to its queue gives a verdict. A verdict given later is
// a delay; a drop is a loss.
const (
	nfnlSubsysQueue = 3

	nfqnlMsgPacket       = 0
	nfqnlMsgVerdict      = 1
	nfqnlMsgConfig       = 2
	nfqnlMsgVerdictBatch = 3

	nfqaPacketHdr  = 1
	nfqaVerdictHdr = 2

	nfqaCfgCmd      = 1
	nfqaCfgParams   = 2
	nfqaCfgQueueMax = 3
	nfqaCfgMask     = 4
	nfqaCfgFlags    = 5

	nfqnlCfgCmdBind = 1
	nfqnlCopyMeta   = 1

	// nfqaCfgFFailOpen: a full queue accepts instead of dropping; GSO:
	// large segments are queued whole, not cut first.
	nfqaCfgFFailOpen = 1
	nfqaCfgFGSO      = 4

	nfDrop   = 0
	nfAccept = 1

	nlmsgHdrLen  = 16
	nfgenHdrLen  = 4
	nlaHdrLen    = 4
	queueMaxLen  = 16384
	socketBuffer = 8 << 20
)

// queue is a bound nfnetlink_queue socket. It is opened inside a network
// namespace and keeps belonging to it. One goroutine reads (buf is its
// own); verdicts may be sent from others, so the sequence is atomic.
type queue struct {
	fd  int
	num uint16
	seq atomic.Uint32
	buf []byte
}

// openQueue binds queue num in the network namespace at nsPath. The socket
// is created by a thread that enters the namespace and leaves it again
// before the thread is given back to the Go scheduler.
func openQueue(nsPath string, num uint16) (*queue, error) {
	fd, err := socketIn(nsPath)
	if err != nil {
		return nil, err
	}
	q := &queue{fd: fd, num: num, buf: make([]byte, 1<<16)}
	if err := q.configure(); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return q, nil
}

func socketIn(nsPath string) (int, error) {
	fd := -1
	err := inNamespace(nsPath, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("netlink socket in %s: %w", nsPath, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuffer)
	// ENOBUFS (the kernel dropped a message for a full buffer) is not
	// reported: a lost packet message only delays that packet until the
	// queue's fail-open path or a later batch verdict accepts it.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	// Reads wake up at least this often, so that a shaper can stop.
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 200_000}); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// configure binds the queue: metadata only (no payload is copied), fail
// open, whole GSO segments.
func (q *queue) configure() error {
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, unix.AF_INET}
	if err := q.request(nfqnlMsgConfig, attr(nfqaCfgCmd, cmd)); err != nil {
		return fmt.Errorf("binding queue %d: %w", q.num, err)
	}
	params := make([]byte, 5)
	params[4] = nfqnlCopyMeta
	flags := make([]byte, 4)
	binary.BigEndian.PutUint32(flags, nfqaCfgFFailOpen|nfqaCfgFGSO)
	maxLen := make([]byte, 4)
	binary.BigEndian.PutUint32(maxLen, queueMaxLen)
	return q.request(nfqnlMsgConfig, attr(nfqaCfgParams, params), attr(nfqaCfgQueueMax, maxLen),
		attr(nfqaCfgFlags, flags), attr(nfqaCfgMask, flags))
}

// attr encodes one netlink attribute, padded to 4 bytes.
func attr(typ uint16, data []byte) []byte {
	n := nlaHdrLen + len(data)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[nlaHdrLen:], data)
	return b
}

// message encodes a nfnetlink message of this queue.
func (q *queue) message(typ uint16, flags uint16, attrs ...[]byte) []byte {
	n := nlmsgHdrLen + nfgenHdrLen
	for _, a := range attrs {
		n += len(a)
	}
	b := make([]byte, nlmsgHdrLen+nfgenHdrLen, n)
	seq := q.seq.Add(1)
	binary.NativeEndian.PutUint32(b[0:], uint32(n))
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<8|typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	b[16] = unix.AF_UNSPEC
	b[17] = 0 // NFNETLINK_V0
	binary.BigEndian.PutUint16(b[18:], q.num)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

// request sends a config message and reads the kernel's acknowledgement.
func (q *queue) request(typ uint16, attrs ...[]byte) error {
	msg := q.message(typ, unix.NLM_F_REQUEST|unix.NLM_F_ACK, attrs...)
	if err := unix.Sendto(q.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	for {
		n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
		if err != nil {
			return err
		}
		for b := q.buf[:n]; len(b) >= nlmsgHdrLen; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < nlmsgHdrLen || l > len(b) {
				return errors.New("short netlink message")
			}
			if binary.NativeEndian.Uint16(b[4:]) == unix.NLMSG_ERROR && l >= nlmsgHdrLen+4 {
				if code := int32(binary.NativeEndian.Uint32(b[nlmsgHdrLen:])); code != 0 {
					return unix.Errno(-code)
				}
				return nil
			}
			b = b[(l+3)&^3:]
		}
	}
}

// read blocks for the next batch of queued packets and returns their ids.
func (q *queue) read(ids []uint32) ([]uint32, error) {
	n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
	if err != nil {
		return ids, err
	}
	for b := q.buf[:n]; len(b) >= nlmsgHdrLen; {
		l := int(binary.NativeEndian.Uint32(b))
		if l < nlmsgHdrLen || l > len(b) {
			return ids, errors.New("short netlink message")
		}
		if binary.NativeEndian.Uint16(b[4:]) == nfnlSubsysQueue<<8|nfqnlMsgPacket {
			if id, ok := packetID(b[nlmsgHdrLen+nfgenHdrLen : l]); ok {
				ids = append(ids, id)
			}
		}
		b = b[(l+3)&^3:]
	}
	return ids, nil
}

// packetID finds NFQA_PACKET_HDR among a packet message's attributes.
func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= nlaHdrLen {
		l := int(binary.NativeEndian.Uint16(attrs))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x3fff
		if l < nlaHdrLen || l > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= nlaHdrLen+4 {
			return binary.BigEndian.Uint32(attrs[nlaHdrLen:]), true
		}
		attrs = attrs[(l+3)&^3:]
	}
	return 0, false
}

// verdict gives one packet its verdict.
func (q *queue) verdict(id uint32, v uint32) error {
	return q.send(nfqnlMsgVerdict, id, v)
}

// acceptUpTo accepts every packet still held with an id up to id.
func (q *queue) acceptUpTo(id uint32) error {
	return q.send(nfqnlMsgVerdictBatch, id, nfAccept)
}

func (q *queue) send(typ uint16, id, v uint32) error {
	hdr := make([]byte, 8)
	binary.BigEndian.PutUint32(hdr[0:], v)
	binary.BigEndian.PutUint32(hdr[4:], id)
	msg := q.message(typ, unix.NLM_F_REQUEST, attr(nfqaVerdictHdr, hdr))
	return unix.Sendto(q.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

func (q *queue) close() error { return unix.Close(q.fd) }
