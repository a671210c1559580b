import Foundation
import Synchronization
import Testing
import TracerTesting
import TracerVerification

@testable import TracerOCR

/// The server's OCR pool: bounded threads, engines kept between pages, refusal when full.
@Suite struct OCRPoolTests {
    @Test func everyPageIsReadOrRefusedAndNoMoreEnginesThanThreads() async throws {
        await ResultImages.ready()
        let data = try Data(contentsOf: URL(fileURLWithPath: ResultImages.file("lab-pcr-positive.png")))
        let pool = OCRPool(threads: 2, queueLimit: 1)
        let outcomes = await withTaskGroup(of: String.self) { group in
            for i in 0..<6 {
                group.addTask {
                    do {
                        let page = try await pool.read(data: data, name: "p\(i).png")
                        return page.words.isEmpty ? "empty" : "read"
                    } catch let e as OCRError {
                        return e.code.rawValue
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(outcomes.count == 6)
        #expect(outcomes.allSatisfy { $0 == "read" || $0 == "busy" }, "\(outcomes)")
        #expect(outcomes.contains("read"))
        #expect(pool.load == 0)
        #expect(pool.idle.withLock { $0.count } <= 2)
        // Full: refused at once, without waiting for a thread.
        pool.admitted.store(3, ordering: .relaxed)
        await #expect(throws: OCRError.self) { try await pool.read(data: data, name: "late.png") }
        pool.admitted.store(0, ordering: .relaxed)
        // Not an image: the client's input, named.
        let error = await #expect(throws: OCRError.self) {
            try await pool.read(data: Data("hello".utf8), name: "x.png")
        }
        #expect(error?.code == .badImage && error?.description.contains("x.png") == true)
        // Closed (its threads ended and waited for): a page after it is refused as busy, not read.
        await pool.close()
        let closed = await #expect(throws: OCRError.self) { try await pool.read(data: data, name: "after.png") }
        #expect(closed?.code == .busy)
        await pool.close()
    }
}
