package rps.app

import android.app.Activity
import android.content.ActivityNotFoundException
import android.content.Intent
import android.graphics.Bitmap
import android.graphics.BitmapFactory
import android.graphics.Color
import android.net.Uri
import android.provider.MediaStore
import com.google.zxing.BarcodeFormat
import com.google.zxing.qrcode.QRCodeWriter
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import rps.client.QrCodes

/**
 * QR codes on the phone: a picture taken with the camera app ([REQUEST_CAMERA]) or chosen
 * ([REQUEST_PICTURE]) read by ZXing's pure-Java core, and a code drawn for another phone to scan.
 */
internal object QrPictures {
    const val REQUEST_CAMERA = 1
    const val REQUEST_PICTURE = 2
    private const val MAX_PICTURE_PX = 1600

    fun takePhoto(): Intent = Intent(MediaStore.ACTION_IMAGE_CAPTURE)
    fun choosePicture(): Intent = Intent(Intent.ACTION_GET_CONTENT).setType("image/*")

    /** Starts [intent] for [request]; false when no app on the phone takes it. */
    fun pick(a: Activity, intent: Intent, request: Int): Boolean = try {
        a.startActivityForResult(intent, request)
        true
    } catch (e: ActivityNotFoundException) {
        false
    }

    /** The text of the QR code in the picture an `onActivityResult` brought, or null. */
    suspend fun textOf(a: Activity, requestCode: Int, data: Intent): String? = withContext(Dispatchers.Default) {
        val picture = when (requestCode) {
            REQUEST_CAMERA ->
                @Suppress("DEPRECATION")
                (data.extras?.get("data") as? Bitmap)
            REQUEST_PICTURE -> data.data?.let { readPicture(a, it) }
            else -> null
        } ?: return@withContext null
        val pixels = IntArray(picture.width * picture.height).also {
            picture.getPixels(it, 0, picture.width, 0, 0, picture.width, picture.height)
        }
        QrCodes.decode(pixels, picture.width, picture.height)
    }

    /** [text] as a QR code of [sizePx] square pixels, black on white (scanners want the contrast whatever the theme). */
    fun draw(text: String, sizePx: Int): Bitmap {
        val m = QRCodeWriter().encode(text, BarcodeFormat.QR_CODE, sizePx, sizePx)
        val pixels = IntArray(m.width * m.height) { i -> if (m.get(i % m.width, i / m.width)) Color.BLACK else Color.WHITE }
        return Bitmap.createBitmap(pixels, m.width, m.height, Bitmap.Config.ARGB_8888)
    }

    /** The picture at [uri], scaled down to at most about [MAX_PICTURE_PX] a side (a QR code needs no more). */
    private fun readPicture(a: Activity, uri: Uri): Bitmap? {
        val bounds = BitmapFactory.Options().apply { inJustDecodeBounds = true }
        a.contentResolver.openInputStream(uri)?.use { BitmapFactory.decodeStream(it, null, bounds) } ?: return null
        var sample = 1
        while (maxOf(bounds.outWidth, bounds.outHeight) / sample > MAX_PICTURE_PX) sample *= 2
        val opts = BitmapFactory.Options().apply { inSampleSize = sample }
        return a.contentResolver.openInputStream(uri)?.use { BitmapFactory.decodeStream(it, null, opts) }
    }
}
