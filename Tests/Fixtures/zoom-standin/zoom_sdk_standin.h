/*
 * zoom_sdk_standin.h — A STAND-IN for the Zoom Linux SDKs' raw-data interfaces, NOT the SDK.
 *
 * Written by us so that CI compiles rawfx/zoom_adapter.hpp without the real SDK. It follows the
 * shapes of the public headers: the Meeting SDK's as of Linux 6.7.5.7391 (zoom_sdk_def.h,
 * zoom_sdk_raw_data_def.h, rawdata/rawdata_video_source_helper_interface.h,
 * rawdata/rawdata_audio_helper_interface.h, rawdata/rawdata_renderer_interface.h,
 * rawdata/rawdata_share_source_helper_interface.h); the Video SDK's from its documentation and
 * published headers (zoom_video_sdk_def.h, zoom_video_sdk_video_source_helper_interface.h,
 * zoom_video_sdk_audio_send_rawdata_interface.h, zoom_video_sdk_delegate_interface.h,
 * zoom_video_sdk_share_helper_interface.h). Production studio is a header of its own, as in the
 * SDK: meeting_service_components/meeting_production_studio_ctrl_interface.h beside this file.
 *
 * The shapes that matter to code written against it:
 *   - namespaces: the raw data classes (AudioRawData, YUVRawDataI420, YUVProcessDataI420) and
 *     zchar_t are global in both SDKs; everything else is in ZOOMVIDEOSDK or ZOOMSDK, including
 *     each SDK's own FrameDataFormat. Nothing is brought into the global namespace.
 *   - default arguments (the senders' format, the audio senders' channel) as in the SDK.
 *   - destructors: virtual where the SDK's are; IZoomSDKAudioRawDataDelegate's is not virtual.
 *   - the capability structs have constructors (they are not aggregates).
 * Every interface the adapter implements is declared whole (each of its pure virtuals), so that
 * an adapter class that misses a callback is abstract here as with the SDK. Classes the adapter
 * only calls (senders, raw data, lists, renderers) declare what it calls; enums list the values
 * used, with the SDK's numbers. A real build includes the SDK's own headers instead of this file.
 *
 * Older Meeting SDK releases: RAWFX_ZOOM_MEETING_SDK_VERSION (major * 10000 + minor * 100 +
 * patch, as the adapter reads it; 60705 when undefined) picks the shape of the parts that
 * changed, as found in public copies of the Linux Meeting SDK's headers (docs/embedding.md
 * names them):
 *   - AudioRawData::GetTimeStamp and YUVRawDataI420::GetTimeStamp: from 6.4 (none in 6.2.5,
 *     both in 6.4.6). The raw data classes are global and shared with the Video SDK's part of
 *     this stand-in, so an older shape takes them from the Video SDK classes too.
 *   - IZoomSDKAudioRawDataDelegate: mixed and one-way only before 5.16.10 (5.15.5, 5.16.5);
 *     then onShareAudioRawDataReceived(AudioRawData*); onOneWayInterpreterAudioRawDataReceived
 *     from 6.1.0 (not in 6.0.2); the share callback with the sharer's user id from 6.5 (not in
 *     6.4.6, in 6.5.10).
 *   - IZoomSDKAudioRawDataSender::send: with the ZoomSDKAudioChannel argument from 5.15 (5.15.5
 *     has it); before, without it and without that enum (a copy of the header older than the
 *     share-audio callback; which release it was is not known).
 * RAWFX_ZOOM_STANDIN_TIMESTAMPS, _SHARE_AUDIO (0, 1: data, 2: data and user id),
 * _INTERPRETER_AUDIO and _SEND_CHANNEL say which shape was taken, for the tests' fakes.
 */
#ifndef RAWFX_ZOOM_SDK_STANDIN_H
#define RAWFX_ZOOM_SDK_STANDIN_H

#include <stdint.h>

#if !defined(RAWFX_ZOOM_MEETING_SDK_VERSION)
#define RAWFX_ZOOM_MEETING_SDK_VERSION 60705
#endif
#define RAWFX_ZOOM_STANDIN_TIMESTAMPS (RAWFX_ZOOM_MEETING_SDK_VERSION >= 60400)
#define RAWFX_ZOOM_STANDIN_SHARE_AUDIO \
    (RAWFX_ZOOM_MEETING_SDK_VERSION >= 60500 ? 2 : RAWFX_ZOOM_MEETING_SDK_VERSION >= 51610 ? 1 : 0)
#define RAWFX_ZOOM_STANDIN_INTERPRETER_AUDIO (RAWFX_ZOOM_MEETING_SDK_VERSION >= 60100)
#define RAWFX_ZOOM_STANDIN_SEND_CHANNEL (RAWFX_ZOOM_MEETING_SDK_VERSION >= 51500)

/* ---- Both SDKs: global ---- */
typedef char zchar_t;

class AudioRawData {
public:
    virtual bool CanAddRef() = 0;
    virtual bool AddRef() = 0;
    virtual int Release() = 0;
    virtual char *GetBuffer() = 0;
    virtual unsigned int GetBufferLen() = 0;
    virtual unsigned int GetSampleRate() = 0;
    virtual unsigned int GetChannelNum() = 0;
#if RAWFX_ZOOM_STANDIN_TIMESTAMPS
    virtual unsigned long long GetTimeStamp() = 0;
#endif
    virtual ~AudioRawData() {}
};

/* A received frame: packed I420 planes (no stride accessor), lent to the delegate. */
class YUVRawDataI420 {
public:
    virtual bool CanAddRef() = 0;
    virtual bool AddRef() = 0;
    virtual int Release() = 0;
    virtual char *GetYBuffer() = 0;
    virtual char *GetUBuffer() = 0;
    virtual char *GetVBuffer() = 0;
    virtual char *GetBuffer() = 0;
    virtual unsigned int GetBufferLen() = 0;
    virtual bool IsLimitedI420() = 0;
    virtual unsigned int GetStreamWidth() = 0;
    virtual unsigned int GetStreamHeight() = 0;
    virtual unsigned int GetRotation() = 0;
    virtual unsigned int GetSourceID() = 0;
#if RAWFX_ZOOM_STANDIN_TIMESTAMPS
    virtual unsigned long long GetTimeStamp() = 0;
#endif
    virtual ~YUVRawDataI420() {}
};

/* The pre-processor's frame: the SDK's own planes, with strides, edited in place. */
class YUVProcessDataI420 {
public:
    virtual unsigned int GetWidth() = 0;
    virtual unsigned int GetHeight() = 0;
    virtual char *GetYBuffer(unsigned int lineNum = 0) = 0;
    virtual char *GetUBuffer(unsigned int lineNum = 0) = 0;
    virtual char *GetVBuffer(unsigned int lineNum = 0) = 0;
    virtual unsigned int GetYStride() = 0;
    virtual unsigned int GetUStride() = 0;
    virtual unsigned int GetVStride() = 0;
    virtual unsigned int GetRotation() = 0;
    virtual bool IsLimitedI420() = 0;
    virtual ~YUVProcessDataI420() {}
};

/* ---- Video SDK (namespace ZOOMVIDEOSDK) ---- */
namespace ZOOMVIDEOSDK {

typedef enum {
    ZoomVideoSDKErrors_Success = 0,
    ZoomVideoSDKErrors_Wrong_Usage = 1,
    ZoomVideoSDKErrors_Invalid_Parameter = 7
} ZoomVideoSDKErrors;
enum FrameDataFormat { FrameDataFormat_I420_LIMITED = 0, FrameDataFormat_I420_FULL = 1 };
enum ZoomVideoSDKAudioChannel { ZoomVideoSDKAudioChannel_Mono = 0, ZoomVideoSDKAudioChannel_Stereo = 1 };
enum VideoSourceDataMode { VideoSourceDataMode_None = 0, VideoSourceDataMode_Horizontal, VideoSourceDataMode_Vertical };

struct VideoSourceCapability {
    unsigned int width;
    unsigned int height;
    unsigned int frame;  /* frames per second */
    VideoSourceDataMode data_mode;
    VideoSourceCapability() : width(0), height(0), frame(0), data_mode(VideoSourceDataMode_None) {}
    VideoSourceCapability(unsigned int w, unsigned int h, unsigned int f)
        : width(w), height(h), frame(f), data_mode(VideoSourceDataMode_None) {}
};

template <class T> class IVideoSDKVector {
public:
    virtual ~IVideoSDKVector() {}
    virtual int GetCount() = 0;
    virtual T GetItem(int index) = 0;
};

typedef enum {
    ZoomVideoSDKResolution_90P = 0,
    ZoomVideoSDKResolution_180P,
    ZoomVideoSDKResolution_360P,
    ZoomVideoSDKResolution_720P,
    ZoomVideoSDKResolution_1080P,
    ZoomVideoSDKResolution_Auto = 100
} ZoomVideoSDKResolution;

typedef enum { RawData_On, RawData_Off } RawDataStatus;

class IZoomVideoSDKRawDataPipeDelegate {
public:
    virtual void onRawDataFrameReceived(YUVRawDataI420 *data_) = 0;
    virtual void onRawDataStatusChanged(RawDataStatus status) = 0;
    virtual ~IZoomVideoSDKRawDataPipeDelegate() {}
};

class IZoomVideoSDKRawDataPipe {
public:
    virtual ~IZoomVideoSDKRawDataPipe() {}
    virtual ZoomVideoSDKErrors subscribe(ZoomVideoSDKResolution resolution, IZoomVideoSDKRawDataPipeDelegate *listener) = 0;
    virtual ZoomVideoSDKErrors unSubscribe(IZoomVideoSDKRawDataPipeDelegate *listener) = 0;
};

class IZoomVideoSDKUser {
public:
    virtual ~IZoomVideoSDKUser() {}
    virtual const zchar_t *getUserID() = 0;
    virtual IZoomVideoSDKRawDataPipe *GetVideoPipe() = 0;
    virtual IZoomVideoSDKRawDataPipe *GetSharePipe() = 0;
};

class IZoomVideoSDKVideoSourcePreProcessor {
public:
    virtual ~IZoomVideoSDKVideoSourcePreProcessor() {}
    virtual void onPreProcessRawData(YUVProcessDataI420 *rawData) = 0;
};

/* Returns nothing, unlike the Meeting SDK's sender. */
class IZoomVideoSDKVideoSender {
public:
    virtual ~IZoomVideoSDKVideoSender() {}
    virtual void sendVideoFrame(char *frameBuffer, int width, int height, int frameLength, int rotation,
                                FrameDataFormat format = FrameDataFormat_I420_FULL) = 0;
};

class IZoomVideoSDKVideoSource {
public:
    virtual ~IZoomVideoSDKVideoSource() {}
    virtual void onInitialize(IZoomVideoSDKVideoSender *sender, IVideoSDKVector<VideoSourceCapability> *support_cap_list,
                              VideoSourceCapability &suggest_cap) = 0;
    virtual void onPropertyChange(IVideoSDKVector<VideoSourceCapability> *support_cap_list, VideoSourceCapability suggest_cap) = 0;
    virtual void onStartSend() = 0;
    virtual void onStopSend() = 0;
    virtual void onUninitialized() = 0;
};

class IZoomVideoSDKVirtualAudioSpeaker {
public:
    virtual ~IZoomVideoSDKVirtualAudioSpeaker() {}
    virtual void onVirtualSpeakerMixedAudioReceived(AudioRawData *data_) = 0;
    virtual void onVirtualSpeakerOneWayAudioReceived(AudioRawData *data_, IZoomVideoSDKUser *pUser) = 0;
    virtual void onVirtualSpeakerSharedAudioReceived(AudioRawData *data_) = 0;
};

class IZoomVideoSDKAudioSender {
public:
    virtual ~IZoomVideoSDKAudioSender() {}
    virtual ZoomVideoSDKErrors Send(char *data, unsigned int data_length, int sample_rate,
                                    ZoomVideoSDKAudioChannel channel = ZoomVideoSDKAudioChannel_Mono) = 0;
};

class IZoomVideoSDKVirtualAudioMic {
public:
    virtual ~IZoomVideoSDKVirtualAudioMic() {}
    virtual void onMicInitialize(IZoomVideoSDKAudioSender *rawdata_sender) = 0;
    virtual void onMicStartSend() = 0;
    virtual void onMicStopSend() = 0;
    virtual void onMicUninitialized() = 0;
};

class IZoomVideoSDKShareSender {
public:
    virtual ~IZoomVideoSDKShareSender() {}
    virtual ZoomVideoSDKErrors sendShareFrame(char *frameBuffer, int width, int height, int frameLength,
                                              FrameDataFormat format = FrameDataFormat_I420_FULL) = 0;
};

class IZoomVideoSDKShareSource {
public:
    virtual ~IZoomVideoSDKShareSource() {}
    virtual void onShareSendStarted(IZoomVideoSDKShareSender *pSender) = 0;
    virtual void onShareSendStopped() = 0;
};

} // namespace ZOOMVIDEOSDK

/* ---- Meeting SDK (namespace ZOOMSDK) ---- */
namespace ZOOMSDK {

/* zoom_sdk_def.h */
enum SDKError { SDKERR_SUCCESS = 0, SDKERR_NO_IMPL = 1, SDKERR_WRONG_USAGE = 2, SDKERR_INVALID_PARAMETER = 3 };
enum FrameDataFormat { FrameDataFormat_I420_LIMITED = 0, FrameDataFormat_I420_FULL = 1 };
#if RAWFX_ZOOM_STANDIN_SEND_CHANNEL
enum ZoomSDKAudioChannel { ZoomSDKAudioChannel_Mono = 0, ZoomSDKAudioChannel_Stereo = 1 };
#endif

template <class T> class IList {
public:
    virtual ~IList() {}
    virtual int GetCount() = 0;
    virtual T GetItem(int index) = 0;
};

/* rawdata/rawdata_video_source_helper_interface.h */
class IZoomSDKPreProcessor {
public:
    virtual ~IZoomSDKPreProcessor() {}
    virtual void onPreProcessRawData(YUVProcessDataI420 *rawData) = 0;
};

class IZoomSDKVideoSender {
public:
    virtual ~IZoomSDKVideoSender() {}
    virtual SDKError sendVideoFrame(char *frameBuffer, int width, int height, int frameLength, int rotation,
                                    FrameDataFormat format = FrameDataFormat_I420_FULL) = 0;
};

/* No data_mode here. */
struct VideoSourceCapability {
    unsigned int width;
    unsigned int height;
    unsigned int frame;  /* frames per second */
    VideoSourceCapability() : width(0), height(0), frame(0) {}
    VideoSourceCapability(unsigned int w, unsigned int h, unsigned int f) : width(w), height(h), frame(f) {}
};

class IZoomSDKVideoSource {
public:
    virtual ~IZoomSDKVideoSource() {}
    virtual void onInitialize(IZoomSDKVideoSender *sender, IList<VideoSourceCapability> *support_cap_list,
                              VideoSourceCapability &suggest_cap) = 0;
    virtual void onPropertyChange(IList<VideoSourceCapability> *support_cap_list, VideoSourceCapability suggest_cap) = 0;
    virtual void onStartSend() = 0;
    virtual void onStopSend() = 0;
    virtual void onUninitialized() = 0;
};

/* rawdata/rawdata_audio_helper_interface.h. The delegate's destructor is not virtual in the SDK. */
class IZoomSDKAudioRawDataDelegate {
public:
    ~IZoomSDKAudioRawDataDelegate() {}
    virtual void onMixedAudioRawDataReceived(AudioRawData *data_) = 0;
    virtual void onOneWayAudioRawDataReceived(AudioRawData *data_, uint32_t user_id) = 0;
#if RAWFX_ZOOM_STANDIN_SHARE_AUDIO == 2
    virtual void onShareAudioRawDataReceived(AudioRawData *data_, uint32_t user_id) = 0;
#elif RAWFX_ZOOM_STANDIN_SHARE_AUDIO == 1
    virtual void onShareAudioRawDataReceived(AudioRawData *data_) = 0;
#endif
#if RAWFX_ZOOM_STANDIN_INTERPRETER_AUDIO
    virtual void onOneWayInterpreterAudioRawDataReceived(AudioRawData *data_, const zchar_t *pLanguageName) = 0;
#endif
};

class IZoomSDKAudioRawDataSender {
public:
    virtual ~IZoomSDKAudioRawDataSender() {}
#if RAWFX_ZOOM_STANDIN_SEND_CHANNEL
    virtual SDKError send(char *data, unsigned int data_length, int sample_rate,
                          ZoomSDKAudioChannel channel = ZoomSDKAudioChannel_Mono) = 0;
#else
    virtual SDKError send(char *data, unsigned int data_length, int sample_rate) = 0;
#endif
};

class IZoomSDKVirtualAudioMicEvent {
public:
    virtual ~IZoomSDKVirtualAudioMicEvent() {}
    virtual void onMicInitialize(IZoomSDKAudioRawDataSender *pSender) = 0;
    virtual void onMicStartSend() = 0;
    virtual void onMicStopSend() = 0;
    virtual void onMicUninitialized() = 0;
};

/* rawdata/rawdata_renderer_interface.h: received video. A renderer is made for its delegate
 * (createRenderer(&renderer, delegate), rawdata/zoom_rawdata_api.h), then subscribed to a user's
 * video (subscribeId: the user id) or a share (the share source id). */
typedef enum ZoomSDKResolution {
    ZoomSDKResolution_90P = 0,
    ZoomSDKResolution_180P,
    ZoomSDKResolution_360P,
    ZoomSDKResolution_720P,
    ZoomSDKResolution_1080P,
    ZoomSDKResolution_NoUse = 100
} ZoomSDKResolution;

typedef enum { RAW_DATA_TYPE_VIDEO = 0, RAW_DATA_TYPE_SHARE } ZoomSDKRawDataType;

class IZoomSDKRendererDelegate {
public:
    enum RawDataStatus { RawData_On, RawData_Off };
    virtual void onRendererBeDestroyed() = 0;
    virtual void onRawDataFrameReceived(YUVRawDataI420 *data) = 0;
    virtual void onRawDataStatusChanged(RawDataStatus status) = 0;
    virtual ~IZoomSDKRendererDelegate() {}
};

class IZoomSDKRenderer {
public:
    virtual SDKError setRawDataResolution(ZoomSDKResolution resolution) = 0;
    virtual SDKError subscribe(uint32_t subscribeId, ZoomSDKRawDataType type) = 0;
    virtual SDKError unSubscribe() = 0;
    virtual ZoomSDKResolution getResolution() = 0;
    virtual ZoomSDKRawDataType getRawDataType() = 0;
    virtual uint32_t getSubscribeId() = 0;
    virtual ~IZoomSDKRenderer() {}
};

/* rawdata/rawdata_share_source_helper_interface.h */
class IZoomSDKShareSender {
public:
    virtual ~IZoomSDKShareSender() {}
    virtual SDKError sendShareFrame(char *frameBuffer, int width, int height, int frameLength,
                                    FrameDataFormat format = FrameDataFormat_I420_FULL) = 0;
};

class IZoomSDKShareSource {
public:
    virtual ~IZoomSDKShareSource() {}
    virtual void onStartSend(IZoomSDKShareSender *pSender) = 0;
    virtual void onStopSend() = 0;
};

} // namespace ZOOMSDK

#endif /* RAWFX_ZOOM_SDK_STANDIN_H */
