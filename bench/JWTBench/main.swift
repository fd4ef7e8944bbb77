import Foundation
import Glibc
import Spout

// Cost of verifying one JWT through Spout's public verifier (SignedTokenVerifier), cold (every signature checked)
// and cached (a subscriber reconnecting with a token already verified), per algorithm. bench/jwt.sh runs it beside
// PyJWT and `openssl speed` in the same run.
//
//     swift run -c release --package-path bench jwt-bench <dir> [rounds]
//
// <dir> holds jwks.json, hs256.txt and es256.txt (one token per line, each distinct: bench/jwt_tokens.py make).
// Every figure is the thread's CPU time per verification (the machine is shared), the median of `rounds` rounds.
// Prints one line per case: `spout <case> <ns>`.

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: jwt-bench <dir> [rounds]")
    exit(2)
}
let directory = arguments[1]
let rounds = arguments.count >= 3 ? max(1, Int(arguments[2]) ?? 7) : 7

func read(_ name: String) -> String {
    guard let text = try? String(contentsOfFile: directory + "/" + name, encoding: .utf8) else {
        print("cannot read \(directory)/\(name)")
        exit(2)
    }
    return text
}

/// The thread's CPU time, in nanoseconds.
func cpuNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

let verifier: SignedTokenVerifier
do {
    verifier = try SignedTokenVerifier(jwks: Array(read("jwks.json").utf8), cacheEntries: 100_000)
} catch {
    print("the key set: \(error.detail)")
    exit(2)
}
let now = Date().timeIntervalSince1970
var failures = 0

for (name, file) in [("HS256", "hs256.txt"), ("ES256", "es256.txt")] {
    let tokens = read(file).split(separator: "\n").map(String.init)
    // Cold: every token's signature checked, each call.
    var cold: [Double] = []
    for _ in 0..<rounds {
        let start = cpuNanoseconds()
        for token in tokens {
            if case .failure = verifier.verifyUncached(token, now: now) { failures += 1 }
        }
        cold.append(Double(cpuNanoseconds() - start) / Double(tokens.count))
    }
    print("spout \(name)-cold \(Int(median(cold).rounded()))")
    // Cached: the first verify of each token checks it; then each reconnection finds it remembered.
    for token in tokens {
        if case .failure = verifier.verify(token, now: now) { failures += 1 }
    }
    var cached: [Double] = []
    for _ in 0..<rounds {
        let start = cpuNanoseconds()
        for _ in 0..<10 {
            for token in tokens {
                if case .failure = verifier.verify(token, now: now) { failures += 1 }
            }
        }
        cached.append(Double(cpuNanoseconds() - start) / Double(tokens.count * 10))
    }
    print("spout \(name)-cached \(Int(median(cached).rounded()))")
}
print("spout cached-tokens \(verifier.cachedTokens)")
if failures > 0 {
    print("FAILED: \(failures) verifications refused")
    exit(1)
}
