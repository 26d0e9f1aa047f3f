import Foundation

let defaultStep = 1
private let maxValue = 1_000

protocol Resettable {
    func reset()
}

enum CounterError: Error {
    case overflow(Int)
    case negative
}

final class Counter: Resettable {
    private(set) var value: Int = 0
    let step: Int

    init(step: Int = defaultStep) {
        self.step = step
    }

    func increment() throws {
        guard value + step <= maxValue else {
            throw CounterError.overflow(value)
        }
        value += step
    }

    func decrement() throws {
        if value - step < 0 {
            throw CounterError.negative
        }
        value -= step
    }

    func reset() {
        value = 0
    }
}

struct Snapshot {
    let value: Int
    let takenAt: Date

    func describe() -> String {
        return "\(value) at \(takenAt)"
    }
}

extension Counter {
    func snapshot() -> Snapshot {
        Snapshot(value: value, takenAt: Date())
    }
}

func makeCounters(_ count: Int) -> [Counter] {
    return (0..<count).map { Counter(step: $0 + 1) }
}
