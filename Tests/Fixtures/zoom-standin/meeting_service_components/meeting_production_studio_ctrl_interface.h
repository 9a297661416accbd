/*
 * meeting_service_components/meeting_production_studio_ctrl_interface.h — A STAND-IN for the
 * Meeting SDK's production-studio header, NOT the SDK. Written by us; named and placed as the
 * SDK's own, so that rawfx/zoom_adapter.hpp finds it the same way (__has_include of
 * <meeting_service_components/meeting_production_studio_ctrl_interface.h>) when this folder is
 * on the include path, and finds nothing when it is not.
 *
 * Shapes as in the SDK's header (the Linux 6.7.5.7391 headers name its controller,
 * IMeetingProductionStudioController, in meeting_service_interface.h; the declarations were
 * checked against the Windows Meeting SDK 6.3.5 and 6.5.12 copies of this header): everything in
 * ZOOMSDK; PSVideoSourceCapability has a constructor (0 x 0, I420 full range); the PS sender's
 * video format defaults to full range, its audio channel has no default; virtual destructors.
 * The controller itself is left out: the adapter implements the event and calls the sender.
 */
#ifndef RAWFX_STANDIN_MEETING_PRODUCTION_STUDIO_CTRL_INTERFACE_H
#define RAWFX_STANDIN_MEETING_PRODUCTION_STUDIO_CTRL_INTERFACE_H

#include "../zoom_sdk_standin.h"

namespace ZOOMSDK {

typedef struct tagPSVideoSourceCapability {
    unsigned int width;
    unsigned int height;
    FrameDataFormat format;
    tagPSVideoSourceCapability() : width(0), height(0), format(FrameDataFormat_I420_FULL) {}
} PSVideoSourceCapability;

class IZoomSDKPSSender {
public:
    virtual ~IZoomSDKPSSender() {}
    /* width, height and format must be those given to StartPSMode. */
    virtual SDKError sendVideoFrame(char *frameBuffer, int width, int height, int frameLength,
                                    FrameDataFormat format = FrameDataFormat_I420_FULL) = 0;
    /* 32 or 48 kHz; data_length even. */
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

} // namespace ZOOMSDK

#endif /* RAWFX_STANDIN_MEETING_PRODUCTION_STUDIO_CTRL_INTERFACE_H */
