import Foundation
import Testing
import TracerCards
import TracerOCR
import TracerTesting

/// The card's QR code: what ZBar reads back from the PNG is the link, byte for byte.
@Suite struct QRCodeTests {
    let dir = TemporaryDirectory("tracer-cards")

    @Test(arguments: [
        "https://tracer.example.org/me#c=abcdefghijkl-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
        "http://127.0.0.1:8080/me#c=x",
    ])
    func theLinkReadsBack(_ link: String) throws {
        let code = try QRCode(link)
        let png = try code.png(scale: 6)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        // IHDR: the side is the modules and the quiet zone, scaled.
        let side = (code.width + 8) * 6
        #expect(Array(png[16..<24]) == QRCodeTests.bigEndian(side) + QRCodeTests.bigEndian(side))
        let file = dir.file("card.png")
        try Data(png).write(to: URL(fileURLWithPath: file))
        let page = try OCREngine().read(file: file)
        #expect(page.codes == [link])
    }

    @Test func nothingOrTooMuchIsAnError() {
        #expect(throws: QRCode.Failure.self) { try QRCode("") }
        #expect(throws: QRCode.Failure.self) { try QRCode(String(repeating: "x", count: 1201)) }
    }

    static func bigEndian(_ v: Int) -> [UInt8] {
        [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
}
