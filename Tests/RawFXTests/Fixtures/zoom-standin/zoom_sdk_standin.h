/*
 * zoom_sdk_standin.h — A STAND-IN for the Zoom Linux SDKs' raw-data interfaces, NOT the SDK.
 *
 * Written from the public headers as quoted in shared/reference/zoom-sdk-raw-data-contracts.md
 * (zoom_sdk_raw_data_def.h, the Video SDK's zoom_video_sdk_video_source_helper_interface.h
 * and zoom_video_sdk_audio_send_rawdata_interface.h, the Meeting SDK's
 * rawdata_video_source_helper_interface.h, rawdata_audio_helper_interface.h and
 * meeting_production_studio_ctrl_interface.h; the Video SDK's raw data pipe from its
 * zoom_video_sdk_delegate_interface.h; the share sources from the Video SDK's
 * zoom_video_sdk_share_helper_interface.h and the Meeting SDK's
 * rawdata_share_source_helper_interface.h; the Meeting SDK's renderer from its
 * rawdata_renderer_interface.h), so that CI
 * compiles rawfx/zoom_adapter.hpp without the real SDK. Only what the adapter uses is
 * declared: names, signatures and enum values as in those headers; everything else is left
 * out. A real build includes the SDK's own headers instead of this file.
 */
#ifndef RAWFX_ZOOM_SDK_STANDIN_H
#define RAWFX_ZOOM_SDK_STANDIN_H

#include <stdint.h>

typedef char zchar_t;

/* zoom_sdk_raw_data_def.h (both SDKs, global namespace) */
class AudioRawData {
public:
    virtual ~AudioRawData() {}
    virtual bool CanAddRef() = 0;
    virtual bool AddRef() = 0;
    virtual int Release() = 0;
    virtual char *GetBuffer() = 0;
    virtual unsigned int GetBufferLen() = 0;
    virtual unsigned int GetSampleRate() = 0;
    virtual unsigned int GetChannelNum() = 0;
    virtual unsigned long long GetTimeStamp() = 0;
};

class YUVProcessDataI420 {
public:
    virtual ~YUVProcessDataI420() {}
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
};

/* A received frame: packed I420 planes (no stride accessor), lent to the pipe delegate. */
class YUVRawDataI420 {
public:
    virtual ~YUVRawDataI420() {}
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
    virtual unsigned long long GetTimeStamp() = 0;
};

enum FrameDataFormat { FrameDataFormat_I420_LIMITED = 0, FrameDataFormat_I420_FULL = 1 };

/* ---- Video SDK (namespace ZOOMVIDEOSDK) ---- */
namespace ZOOMVIDEOSDK {

enum ZoomVideoSDKErrors { ZoomVideoSDKErrors_Success = 0, ZoomVideoSDKErrors_Wrong_Usage = 1, ZoomVideoSDKErrors_Invalid_Parameter = 7 };
enum ZoomVideoSDKAudioChannel { ZoomVideoSDKAudioChannel_Mono = 0, ZoomVideoSDKAudioChannel_Stereo = 1 };
enum VideoSourceDataMode { VideoSourceDataMode_None = 0, VideoSourceDataMode_Horizontal, VideoSourceDataMode_Vertical };

struct VideoSourceCapability {
    unsigned int width;
    unsigned int height;
    unsigned int frame;
    VideoSourceDataMode data_mode;
};

template <class T> class IVideoSDKVector {
public:
    virtual ~IVideoSDKVector() {}
    virtual int GetCount() = 0;
    virtual T GetItem(int index) = 0;
};

/* zoom_video_sdk_delegate_interface.h / zoom_video_sdk_user_helper_interface.h */
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

enum SDKError { SDKERR_SUCCESS = 0, SDKERR_NO_IMPL = 1, SDKERR_WRONG_USAGE = 2, SDKERR_INVALID_PARAMETER = 3 };
enum ZoomSDKAudioChannel { ZoomSDKAudioChannel_Mono = 0, ZoomSDKAudioChannel_Stereo = 1 };

struct VideoSourceCapability {
    unsigned int width;
    unsigned int height;
    unsigned int frame;
};

template <class T> class IList {
public:
    virtual ~IList() {}
    virtual int GetCount() = 0;
    virtual T GetItem(int index) = 0;
};

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

class IZoomSDKAudioRawDataDelegate {
public:
    virtual ~IZoomSDKAudioRawDataDelegate() {}
    virtual void onMixedAudioRawDataReceived(AudioRawData *data_) = 0;
    virtual void onOneWayAudioRawDataReceived(AudioRawData *data_, uint32_t user_id) = 0;
    virtual void onShareAudioRawDataReceived(AudioRawData *data_, uint32_t user_id) = 0;
    virtual void onOneWayInterpreterAudioRawDataReceived(AudioRawData *data_, const zchar_t *pLanguageName) = 0;
};

class IZoomSDKAudioRawDataSender {
public:
    virtual ~IZoomSDKAudioRawDataSender() {}
    virtual SDKError send(char *data, unsigned int data_length, int sample_rate,
                          ZoomSDKAudioChannel channel = ZoomSDKAudioChannel_Mono) = 0;
};

class IZoomSDKVirtualAudioMicEvent {
public:
    virtual ~IZoomSDKVirtualAudioMicEvent() {}
    virtual void onMicInitialize(IZoomSDKAudioRawDataSender *rawdata_sender) = 0;
    virtual void onMicStartSend() = 0;
    virtual void onMicStopSend() = 0;
    virtual void onMicUninitialized() = 0;
};

/* meeting_production_studio_ctrl_interface.h */
typedef struct tagPSVideoSourceCapability {
    unsigned int width;
    unsigned int height;
    FrameDataFormat format;
} PSVideoSourceCapability;

class IZoomSDKPSSender {
public:
    virtual ~IZoomSDKPSSender() {}
    virtual SDKError sendVideoFrame(char *frameBuffer, int width, int height, int frameLength,
                                    FrameDataFormat format = FrameDataFormat_I420_FULL) = 0;
    virtual SDKError sendAudio(char *data, unsigned int data_length, int sample_rate, ZoomSDKAudioChannel channelNum) = 0;
};

class IMeetingProductionStudioCtrlEvent {
public:
    virtual ~IMeetingProductionStudioCtrlEvent() {}
    virtual void onStartPSModeResult(bool bSuccess) = 0;
    virtual void onStartSend(IZoomSDKPSSender *sender) = 0;
    virtual void onStopSend() = 0;
    virtual void onPSUserStatusChanged(unsigned int userID, bool bStart) = 0;
};

/* rawdata_renderer_interface.h: received video. A renderer is made for its delegate
 * (createRenderer(&renderer, delegate)), then subscribed to a user's video (subscribeId: the
 * user id) or share (the share source id). */
typedef enum {
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

/* rawdata_share_source_helper_interface.h */
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
