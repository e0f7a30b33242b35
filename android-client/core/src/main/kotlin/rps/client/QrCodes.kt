package rps.client

import com.google.zxing.BarcodeFormat
import com.google.zxing.BinaryBitmap
import com.google.zxing.DecodeHintType
import com.google.zxing.NotFoundException
import com.google.zxing.RGBLuminanceSource
import com.google.zxing.ReaderException
import com.google.zxing.common.HybridBinarizer
import com.google.zxing.qrcode.QRCodeReader

/** Reads QR codes from pictures with ZXing's pure-Java decoder (no Play services on the phone). */
object QrCodes {
    /** The text of the QR code in an ARGB picture of [width] x [height], or null when none is found. */
    fun decode(argb: IntArray, width: Int, height: Int): String? {
        val hints = mapOf(DecodeHintType.TRY_HARDER to true, DecodeHintType.POSSIBLE_FORMATS to listOf(BarcodeFormat.QR_CODE))
        val source = RGBLuminanceSource(width, height, argb)
        for (bitmap in listOf(BinaryBitmap(HybridBinarizer(source)), BinaryBitmap(HybridBinarizer(source.invert())))) {
            try {
                return QRCodeReader().decode(bitmap, hints).text
            } catch (_: NotFoundException) {
            } catch (_: ReaderException) {
            }
        }
        return null
    }
}
