/// Schoolbook arithmetic on decimal strings, written independently of `BigUInt` so that tests can check
/// its results against something it does not share code with.
enum DecimalString {
    /// The sum of two non-negative decimal strings.
    static func add(_ lhs: String, _ rhs: String) -> String {
        let left = Array(lhs.utf8.reversed())
        let right = Array(rhs.utf8.reversed())
        var digits: [UInt8] = []
        var carry = 0
        for position in 0..<max(left.count, right.count) {
            let a = position < left.count ? Int(left[position] - UInt8(ascii: "0")) : 0
            let b = position < right.count ? Int(right[position] - UInt8(ascii: "0")) : 0
            let sum = a + b + carry
            digits.append(UInt8(sum % 10) + UInt8(ascii: "0"))
            carry = sum / 10
        }
        if carry > 0 { digits.append(UInt8(carry) + UInt8(ascii: "0")) }
        return String(decoding: digits.reversed(), as: UTF8.self)
    }

    /// The product of two non-negative decimal strings.
    static func multiply(_ lhs: String, _ rhs: String) -> String {
        let left = lhs.utf8.reversed().map { Int($0 - UInt8(ascii: "0")) }
        let right = rhs.utf8.reversed().map { Int($0 - UInt8(ascii: "0")) }
        var digits = [Int](repeating: 0, count: left.count + right.count)
        for (i, a) in left.enumerated() {
            var carry = 0
            for (j, b) in right.enumerated() {
                let total = digits[i + j] + a * b + carry
                digits[i + j] = total % 10
                carry = total / 10
            }
            var k = i + right.count
            while carry > 0 {
                let total = digits[k] + carry
                digits[k] = total % 10
                carry = total / 10
                k += 1
            }
        }
        while digits.count > 1 && digits.last == 0 { digits.removeLast() }
        return String(digits.reversed().map { Character(String($0)) })
    }

    /// F(n) by repeated string addition.
    static func fibonacci(_ n: Int) -> String {
        var (a, b) = ("0", "1")
        for _ in 0..<n { (a, b) = (b, add(a, b)) }
        return a
    }

    /// n! by repeated string multiplication.
    static func factorial(_ n: Int) -> String {
        var product = "1"
        for factor in stride(from: 2, through: n, by: 1) { product = multiply(product, String(factor)) }
        return product
    }
}
