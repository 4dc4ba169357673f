// CPU accounting over a run's window: the server's, the driver's and the
// whole machine's, from /proc.

package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

func procCPU(path string) (float64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseFloat(f[11], 64)  // utime, field 14
	sy, _ := strconv.ParseFloat(f[12], 64) // stime, field 15
	return (u + sy) / clkTck, true
}

func sampleCPU() cpuSample {
	var c cpuSample
	c.self, _ = procCPU("/proc/self/stat")
	if *serverPid > 0 {
		c.server, c.serverOK = procCPU(fmt.Sprintf("/proc/%d/stat", *serverPid))
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line := strings.SplitN(string(b), "\n", 2)[0]
		f := strings.Fields(line)
		if len(f) >= 9 && f[0] == "cpu" {
			var v [8]float64
			for j := 0; j < 8; j++ {
				v[j], _ = strconv.ParseFloat(f[j+1], 64)
			}
			// user nice system idle iowait irq softirq steal
			c.busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / clkTck
			c.total = (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) / clkTck
			c.sysOK = true
		}
	}
	return c
}

func cpuSummary(a, b cpuSample, window float64, txns int64) map[string]any {
	r := func(x float64) float64 { return math.Round(x*100) / 100 }
	out := map[string]any{}
	driver := (b.self - a.self) / window
	out["driver_cores"] = r(driver)
	if txns > 0 {
		out["driver_ms_per_txn"] = math.Round((b.self-a.self)/float64(txns)*1e6) / 1e3
	}
	server := 0.0
	if a.serverOK && b.serverOK {
		server = (b.server - a.server) / window
		out["server_cores"] = r(server)
		if txns > 0 {
			out["server_ms_per_txn"] = math.Round((b.server-a.server)/float64(txns)*1e6) / 1e3
		}
	}
	if a.sysOK && b.sysOK {
		busy := (b.busy - a.busy) / window
		out["busy_cores"] = r(busy)
		out["cores"] = r((b.total - a.total) / window)
		if a.serverOK && b.serverOK {
			out["others_cores"] = r(busy - server - driver)
		}
	}
	return out
}
