// scale: channel fan-out at scale, for bench/channels_scale.sh. One publisher and many SSE subscribers held by
// several child processes (a process may open at most 20,000 descriptors here), so one run can hold more
// subscribers than one process may, spread over several servers (replicas) and several loopback source
// addresses (each source address has its own ephemeral ports).
//
//	scale -pub URL [-suburls A,B,…] -subs N [-procs K] [-sources 127.0.0.1,127.0.0.2] [-channels P] [-per C]
//	      [-events M] [-rate R] [-raw] [-hold D]
//
// Subscriber i follows C channels of a pool of P (`<prefix>-<j>`, j = (i·C + c) mod P for c < C): with C = 1
// through `GET /channels/{name}`, with C > 1 through one `GET /subscribe?channel=…&channel=…` (Spout only).
// Subscribers are spread round-robin over the servers of -suburls (default: -pub) and the -sources addresses.
// Once every subscriber has read a warm-up event (published to every channel of the pool every 100 ms until
// then), event k (0 ≤ k < M) is published to channel k mod P with the body `{"data":[k,I,S]}` (`[k,I,S]` with
// -raw, for servers that relay the body as the data: nchan), S its send time in ns and I its intended time: at R
// events/s event k is due at start + k/R, and I is that time, whenever the publisher gets to send it (the
// publishes are sequential, so a server whose publish is slower than 1/R falls behind); as fast as the publishes
// return (R = 0), I = S. Latency is counted from I (coordinated omission corrected, as wrk2 does: a server that
// cannot take the offered rate is charged for its backlog) and, separately, from S. Each subscriber checks it gets
// exactly the events of its channels: every one, once.
// With -before-publish CMD, the shell command CMD runs after the warm-up, before the first publish (a profiler's
// counters zeroed there, say). With -hold D the run publishes nothing after the warm-up: it prints `scale_ready` and holds the subscribers
// for D (idle memory).
//
// Prints, one figure a line: scale_connected, scale_failed, scale_connect_s, scale_delivered: D of E,
// scale_duplicates, scale_unexpected, scale_complete_subscribers, scale_events_per_s (D / time from the first
// publish to the last delivery), scale_latency_p50_ms / p99_ms / max_ms (from the intended time),
// scale_sent_latency_p50_ms / p99_ms / max_ms (from the send time), scale_publish_per_s (achieved),
// scale_publish_lag_max_ms (the latest a publish was sent after its intended time) and scale_generator_cpu_s (the
// CPU this program and its children used, user + system: the readers' share of a shared machine) and
// scale_generator_publish_cpu_s (the same from the first publish on: the readers' CPU for the deliveries).
//
// Children are this program run again with -child; they talk to the parent over stdin/stdout: `ready OK FAILED`
// once their subscribers are warm, then, on `stop` (or EOF, or when every subscriber has all its events),
// `result DELIVERED DUPLICATES UNEXPECTED COMPLETE LAST_NS`, `hist BUCKET COUNT …` (from the intended time) and
// `shist BUCKET COUNT …` (from the send time). Talks only to the given URLs
// (loopback); every wait is bounded by -timeout.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Latencies are counted in buckets of 100 µs up to 120 s (a server that cannot take the offered rate is charged for
// a backlog of tens of seconds); later ones land in the last bucket.
const bucketNs = 100_000
const buckets = 1_200_001

var (
	pub      = flag.String("pub", "http://127.0.0.1:8080", "base URL publishes go to")
	subURLs  = flag.String("suburls", "", "comma-separated base URLs of the subscribers (default: -pub)")
	subs     = flag.Int("subs", 1000, "subscribers")
	procs    = flag.Int("procs", 1, "child processes holding the subscribers")
	sources  = flag.String("sources", "127.0.0.1", "comma-separated loopback source addresses")
	channels = flag.Int("channels", 1, "channels in the pool")
	per      = flag.Int("per", 1, "channels per subscriber (more than 1: GET /subscribe)")
	events   = flag.Int("events", 1000, "events to publish")
	rate     = flag.Int("rate", 0, "events per second (0: as fast as publishing allows)")
	raw      = flag.Bool("raw", false, "publish the bare [k,T] as the body (nchan)")
	prefix   = flag.String("prefix", fmt.Sprintf("scale%d", time.Now().UnixNano()), "channel name prefix")
	timeout  = flag.Duration("timeout", 300*time.Second, "bound on the whole run")
	grace    = flag.Duration("grace", 60*time.Second, "how long deliveries may take after the last publish")
	hold     = flag.Duration("hold", 0, "idle mode: hold the warm subscribers this long, publish nothing")
	before   = flag.String("before-publish", "", "a shell command run after the warm-up, before the first publish")
	child    = flag.Bool("child", false, "internal: run as a child holding subscribers [first, first+count)")
	first    = flag.Int("first", 0, "internal: the child's first subscriber")
	count    = flag.Int("count", 0, "internal: the child's subscribers")
)

func main() {
	flag.Parse()
	if *per < 1 || *per > *channels || *subs < 1 || *procs < 1 {
		fmt.Fprintln(os.Stderr, "scale: need 1 <= per <= channels, subs >= 1, procs >= 1")
		os.Exit(2)
	}
	if *child {
		runChild()
	} else {
		runParent()
	}
}

func channelName(j int) string { return fmt.Sprintf("%s-%d", *prefix, j) }

// channelsOf is subscriber i's channels, as indices into the pool.
func channelsOf(i int) []int {
	out := make([]int, *per)
	for c := 0; c < *per; c++ {
		out[c] = (i**per + c) % *channels
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// ---- child: holds subscribers ----

type subscriber struct {
	wanted   []bool // per pool channel
	seen     []uint64
	expected int
	got      int
	dup      int
	unexp    int
}

var (
	hist      [buckets]int64 // latency from the intended publish time
	sentHist  [buckets]int64 // latency from the actual send time
	lastNs    int64
	completes int64
	allDone   = make(chan struct{})
	doneOnce  sync.Once
	remaining int64
)

func runChild() {
	deadline := time.Now().Add(*timeout)
	bases := splitList(*subURLs)
	if len(bases) == 0 {
		bases = []string{*pub}
	}
	srcs := splitList(*sources)
	var ready, failed int64
	subsState := make([]*subscriber, *count)
	conns := make([]net.Conn, *count)
	var connsMu sync.Mutex
	remaining = int64(*count)
	dialSlots := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for n := 0; n < *count; n++ {
		i := *first + n
		s := &subscriber{wanted: make([]bool, *channels), seen: make([]uint64, (*events+63)/64)}
		for _, j := range channelsOf(i) {
			s.wanted[j] = true
		}
		for k := 0; k < *events; k++ {
			if s.wanted[k%*channels] {
				s.expected++
			}
		}
		subsState[n] = s
		wg.Add(1)
		go func(n, i int, s *subscriber) {
			defer wg.Done()
			base := bases[i%len(bases)]
			src := srcs[i%len(srcs)]
			var path string
			if *per == 1 {
				path = "/channels/" + channelName(channelsOf(i)[0])
			} else {
				q := url.Values{}
				for _, j := range channelsOf(i) {
					q.Add("channel", channelName(j))
				}
				path = "/subscribe?" + q.Encode()
			}
			dialSlots <- struct{}{}
			conn, body, err := open(base, src, path, deadline)
			<-dialSlots
			if err != nil {
				fmt.Fprintf(os.Stderr, "scale: subscriber %d: %v\n", i, err)
				atomic.AddInt64(&failed, 1)
				finishOne()
				return
			}
			connsMu.Lock()
			conns[n] = conn
			connsMu.Unlock()
			read(body, s, &ready)
			if s.got == s.expected {
				atomic.AddInt64(&completes, 1)
			}
			finishOne()
		}(n, i, s)
	}
	out := bufio.NewWriter(os.Stdout)
	// Report readiness once every subscriber is warm or failed.
	go func() {
		for time.Now().Before(deadline) {
			r, f := atomic.LoadInt64(&ready), atomic.LoadInt64(&failed)
			if r+f >= int64(*count) {
				fmt.Fprintf(out, "ready %d %d\n", r, f)
				out.Flush()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	stop := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "stop" {
				break
			}
		}
		close(stop)
	}()
	select {
	case <-stop:
	case <-allDone:
	case <-time.After(time.Until(deadline)):
	}
	connsMu.Lock()
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	connsMu.Unlock()
	wg.Wait()
	var got, dup, unexp int64
	for _, s := range subsState {
		got += int64(s.got)
		dup += int64(s.dup)
		unexp += int64(s.unexp)
	}
	fmt.Fprintf(out, "result %d %d %d %d %d\n", got, dup, unexp, atomic.LoadInt64(&completes), atomic.LoadInt64(&lastNs))
	for _, hs := range []struct {
		name string
		h    *[buckets]int64
	}{{"hist", &hist}, {"shist", &sentHist}} {
		fmt.Fprint(out, hs.name)
		for b := range hs.h {
			if hs.h[b] != 0 {
				fmt.Fprintf(out, " %d %d", b, hs.h[b])
			}
		}
		fmt.Fprintln(out)
	}
	out.Flush()
}

func finishOne() {
	if atomic.AddInt64(&remaining, -1) == 0 {
		doneOnce.Do(func() { close(allDone) })
	}
}

// open connects from src to base and sends the subscription request; it returns the connection and its body.
func open(base, src, path string, deadline time.Time) (net.Conn, io.Reader, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5 && time.Now().Before(deadline); attempt++ {
		d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		conn, err := d.Dial("tcp", u.Host)
		if err != nil {
			lastErr = err
			time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
			continue
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", path, u.Host)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReaderSize(conn, 4096)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			conn.Close()
			lastErr = err
			continue
		}
		if resp.StatusCode != 200 {
			conn.Close()
			return nil, nil, fmt.Errorf("status %d", resp.StatusCode)
		}
		conn.SetReadDeadline(deadline)
		return conn, resp.Body, nil
	}
	return nil, nil, lastErr
}

// read counts what the subscriber receives until it has every expected event or the connection ends.
func read(body io.Reader, s *subscriber, ready *int64) {
	r := bufio.NewReaderSize(body, 4096)
	warm := false
	for s.got < s.expected || !warm {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue
		}
		k, t, sent, ok := triple(line)
		if !ok {
			continue
		}
		if k < 0 {
			if !warm {
				warm = true
				atomic.AddInt64(ready, 1)
			}
			continue
		}
		now := time.Now().UnixNano()
		if k >= int64(*events) || !s.wanted[k%int64(*channels)] {
			s.unexp++
			continue
		}
		if s.seen[k/64]&(1<<(k%64)) != 0 {
			s.dup++
			continue
		}
		s.seen[k/64] |= 1 << (k % 64)
		s.got++
		atomic.AddInt64(&hist[bucket(now-t)], 1)
		atomic.AddInt64(&sentHist[bucket(now-sent)], 1)
		for {
			old := atomic.LoadInt64(&lastNs)
			if now <= old || atomic.CompareAndSwapInt64(&lastNs, old, now) {
				break
			}
		}
	}
}

func bucket(ns int64) int64 {
	b := ns / bucketNs
	if b < 0 {
		return 0
	} else if b >= buckets {
		return buckets - 1
	}
	return b
}

// triple reads the last `[k,I,S]` of a data line.
func triple(line []byte) (int64, int64, int64, bool) {
	open := bytes.LastIndexByte(line, '[')
	if open < 0 {
		return 0, 0, 0, false
	}
	rest := line[open+1:]
	end := bytes.IndexByte(rest, ']')
	if end < 0 {
		return 0, 0, 0, false
	}
	parts := bytes.SplitN(rest[:end], []byte(","), 3)
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	k, err1 := strconv.ParseInt(string(bytes.TrimSpace(parts[0])), 10, 64)
	t, err2 := strconv.ParseInt(string(bytes.TrimSpace(parts[1])), 10, 64)
	s, err3 := strconv.ParseInt(string(bytes.TrimSpace(parts[2])), 10, 64)
	return k, t, s, err1 == nil && err2 == nil && err3 == nil
}

// ---- parent: starts the children, publishes, sums up ----

type childProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func runParent() {
	deadline := time.Now().Add(*timeout)
	self, err := os.Executable()
	if err != nil {
		fmt.Println("scale_error:", err)
		os.Exit(1)
	}
	var kids []*childProc
	per := (*subs + *procs - 1) / *procs
	connectStart := time.Now()
	for f := 0; f < *subs; f += per {
		n := per
		if f+n > *subs {
			n = *subs - f
		}
		args := append([]string{"-child", "-first", strconv.Itoa(f), "-count", strconv.Itoa(n),
			"-prefix", *prefix}, passThrough()...)
		cmd := exec.Command(self, args...)
		cmd.Stderr = os.Stderr
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fmt.Println("scale_error: child:", err)
			os.Exit(1)
		}
		k := &childProc{cmd: cmd, stdin: stdin, lines: make(chan string, 4)}
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 1<<26)
			for sc.Scan() {
				k.lines <- sc.Text()
			}
			close(k.lines)
		}()
		kids = append(kids, k)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 60 * time.Second}
	// publish sends event k; intended is its due time in ns (0: now, as it is sent).
	publish := func(channel int, k int64, intended int64) bool {
		now := time.Now().UnixNano()
		if intended == 0 {
			intended = now
		}
		v := fmt.Sprintf("[%d,%d,%d]", k, intended, now)
		if !*raw {
			v = `{"data":` + v + `}`
		}
		resp, err := client.Post(*pub+"/channels/"+channelName(channel)+"/events", "application/json",
			strings.NewReader(v))
		if err != nil {
			fmt.Fprintln(os.Stderr, "scale: publish:", err)
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode/100 == 2
	}

	// Warm-up: publish k = -1 to every channel until every child says its subscribers are warm.
	var connected, failed int64
	readyKids := 0
	isReady := make([]bool, len(kids))
	for readyKids < len(kids) && time.Now().Before(deadline) {
		for j := 0; j < *channels; j++ {
			if !publish(j, -1, 0) {
				fmt.Println("scale_error: warm-up publish failed")
				stopAll(kids)
				os.Exit(1)
			}
		}
		wait := time.After(100 * time.Millisecond)
	collect:
		for {
			for n, k := range kids {
				if isReady[n] {
					continue
				}
				select {
				case line, ok := <-k.lines:
					if !ok {
						fmt.Println("scale_error: a child ended early")
						stopAll(kids)
						os.Exit(1)
					}
					var r, f int64
					if _, err := fmt.Sscanf(line, "ready %d %d", &r, &f); err == nil {
						connected += r
						failed += f
						isReady[n] = true
						readyKids++
					}
				default:
				}
			}
			select {
			case <-wait:
				break collect
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	fmt.Printf("scale_connected: %d\nscale_failed: %d\nscale_connect_s: %.1f\n", connected, failed,
		time.Since(connectStart).Seconds())
	if readyKids < len(kids) {
		fmt.Println("scale_error: not every subscriber was ready before the timeout")
		stopAll(kids)
		os.Exit(1)
	}

	if *hold > 0 {
		fmt.Printf("scale_ready: %d\n", connected)
		time.Sleep(*hold)
		stopAll(kids)
		collect(kids, time.Now(), 0, deadline)
		return
	}

	if *before != "" {
		if out, err := exec.Command("sh", "-c", *before).CombinedOutput(); err != nil {
			fmt.Printf("scale_error: -before-publish: %v %s\n", err, out)
		}
	}
	publishCPU = generatorCPU(kids)
	start := time.Now()
	var gap time.Duration
	if *rate > 0 {
		gap = time.Second / time.Duration(*rate)
	}
	published := 0
	var maxLag time.Duration
	for k := 0; k < *events && time.Now().Before(deadline); k++ {
		var intended int64
		if gap > 0 {
			due := start.Add(time.Duration(k) * gap)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			} else if -d > maxLag {
				maxLag = -d
			}
			intended = due.UnixNano()
		}
		if !publish(k%*channels, int64(k), intended) {
			fmt.Println("scale_error: publish failed")
			break
		}
		published++
	}
	pubElapsed := time.Since(start)
	fmt.Printf("scale_publish_per_s: %.1f\n", float64(published)/pubElapsed.Seconds())
	if gap > 0 {
		fmt.Printf("scale_publish_lag_max_ms: %.1f\n", float64(maxLag)/1e6)
	}
	end := time.Now().Add(*grace)
	if end.After(deadline) {
		end = deadline
	}
	collect(kids, start, published, end)
}

// publishCPU is the generator's CPU (this process and its children) when the first event was published (-1: none
// was); childrenCPU the children's whole CPU, summed as each is waited for.
var publishCPU, childrenCPU time.Duration = -1, 0

// generatorCPU is the CPU this process and its children have used so far.
func generatorCPU(kids []*childProc) time.Duration {
	total := cpuOf(os.Getpid())
	for _, k := range kids {
		total += cpuOf(k.cmd.Process.Pid)
	}
	return total
}

// cpuOf is the CPU (user + system) process pid has used so far, from /proc (clock ticks of 10 ms); 0 when unknown.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, which may hold spaces): state is field 3, utime 14, stime 15.
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// passThrough is the flags a child needs.
func passThrough() []string {
	return []string{"-pub", *pub, "-suburls", *subURLs, "-sources", *sources, "-channels", strconv.Itoa(*channels),
		"-per", strconv.Itoa(*per), "-events", strconv.Itoa(*events), "-timeout", timeout.String()}
}

func stopAll(kids []*childProc) {
	for _, k := range kids {
		io.WriteString(k.stdin, "stop\n")
		k.stdin.Close()
	}
}

// collect waits for each child's result (telling every child to stop at `end`) and prints the figures.
func collect(kids []*childProc, start time.Time, published int, end time.Time) {
	var got, dup, unexp, complete, last int64
	var h = make([]int64, buckets)
	var sh = make([]int64, buckets)
	stopped := false
	timer := time.NewTimer(time.Until(end))
	for _, k := range kids {
		for done := false; !done; {
			select {
			case line, ok := <-k.lines:
				if !ok {
					done = true
					break
				}
				f := strings.Fields(line)
				if len(f) == 6 && f[0] == "result" {
					v := make([]int64, 5)
					for x := range v {
						v[x], _ = strconv.ParseInt(f[x+1], 10, 64)
					}
					got, dup, unexp, complete = got+v[0], dup+v[1], unexp+v[2], complete+v[3]
					if v[4] > last {
						last = v[4]
					}
				} else if len(f) > 0 && (f[0] == "hist" || f[0] == "shist") {
					into := h
					if f[0] == "shist" {
						into = sh
					}
					for x := 1; x+1 < len(f); x += 2 {
						b, _ := strconv.Atoi(f[x])
						c, _ := strconv.ParseInt(f[x+1], 10, 64)
						into[b] += c
					}
				}
			case <-timer.C:
				if !stopped {
					stopped = true
					stopAll(kids)
				}
			}
		}
		k.cmd.Wait()
		if st := k.cmd.ProcessState; st != nil {
			childrenCPU += st.UserTime() + st.SystemTime()
		}
	}
	if !stopped {
		stopAll(kids)
	}
	if publishCPU >= 0 {
		used := cpuOf(os.Getpid()) + childrenCPU - publishCPU
		fmt.Printf("scale_generator_publish_cpu_s: %.2f\n", used.Seconds())
	}
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	cpuNs := self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano()
	fmt.Printf("scale_generator_cpu_s: %.2f\n", float64(cpuNs)/1e9)
	expected := int64(0)
	perChannel := make([]int64, *channels) // events published to each channel
	for k := 0; k < published; k++ {
		perChannel[k%*channels]++
	}
	for i := 0; i < *subs; i++ {
		for _, j := range channelsOf(i) {
			expected += perChannel[j]
		}
	}
	fmt.Printf("scale_delivered: %d of %d\nscale_duplicates: %d\nscale_unexpected: %d\n", got, expected, dup, unexp)
	fmt.Printf("scale_complete_subscribers: %d of %d\n", complete, *subs)
	if published == 0 {
		return
	}
	if elapsed := time.Duration(last - start.UnixNano()); elapsed > 0 {
		fmt.Printf("scale_events_per_s: %.0f\n", float64(got)/elapsed.Seconds())
		fmt.Printf("scale_delivery_s: %.2f\n", elapsed.Seconds())
	}
	pct := func(h []int64, p float64) float64 {
		if got == 0 {
			return 0
		}
		target := int64(p * float64(got-1))
		var seen int64
		for b, c := range h {
			seen += c
			if seen > target {
				return float64(b) * bucketNs / 1e6
			}
		}
		return 0
	}
	fmt.Printf("scale_latency_p50_ms: %.2f\nscale_latency_p99_ms: %.2f\nscale_latency_max_ms: %.2f\n",
		pct(h, 0.5), pct(h, 0.99), pct(h, 1))
	fmt.Printf("scale_sent_latency_p50_ms: %.2f\nscale_sent_latency_p99_ms: %.2f\nscale_sent_latency_max_ms: %.2f\n",
		pct(sh, 0.5), pct(sh, 0.99), pct(sh, 1))
}
