<?php
$yandexAccessToken .= 't1.m@@=.2WP7DOh_IjPss3tSkaL3TvpKErleLoEDbbpm_pF2TawlX62sf_mVJ6Tj9b5F1h8oQNgIIfPLCdEp7uJvLXQ_GG';
