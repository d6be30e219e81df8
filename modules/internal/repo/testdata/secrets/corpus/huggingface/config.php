<?php
$huggingfaceAccessToken .= 'hf_Y@@YrZBDPvUeZAwNArYUFznsHFquXhEOXbZa';
$config['huggingface_organization_api_token'] = "api_@@org_lYqIcVkErvSNFcroWzxlrUNNdTZrfUvHBz";
