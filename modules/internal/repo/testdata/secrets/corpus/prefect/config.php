<?php
$prefectApiToken .= 'pnu_@@hhsv8hnzlmvumir83sn2oe99xdcow4sgo8m2';
