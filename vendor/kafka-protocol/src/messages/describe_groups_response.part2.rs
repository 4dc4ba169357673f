// Part 2 of describe_groups_response.rs, split by split_long_files.py at item boundaries; generated code.
#[cfg(feature = "broker")]
impl Encodable for DescribedGroupMember {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {
        if version < 0 || version > 6 {
            bail!("specified version not supported by this message type");
        }
        if version >= 5 {
            types::CompactString.encode(buf, &self.member_id)?;
        } else {
            types::String.encode(buf, &self.member_id)?;
        }
        if version >= 4 {
            if version >= 5 {
                types::CompactString.encode(buf, &self.group_instance_id)?;
            } else {
                types::String.encode(buf, &self.group_instance_id)?;
            }
        }
        if version >= 5 {
            types::CompactString.encode(buf, &self.client_id)?;
        } else {
            types::String.encode(buf, &self.client_id)?;
        }
        if version >= 5 {
            types::CompactString.encode(buf, &self.client_host)?;
        } else {
            types::String.encode(buf, &self.client_host)?;
        }
        if version >= 5 {
            types::CompactBytes.encode(buf, &self.member_metadata)?;
        } else {
            types::Bytes.encode(buf, &self.member_metadata)?;
        }
        if version >= 5 {
            types::CompactBytes.encode(buf, &self.member_assignment)?;
        } else {
            types::Bytes.encode(buf, &self.member_assignment)?;
        }
        if version >= 5 {
            let num_tagged_fields = self.unknown_tagged_fields.len();
            if num_tagged_fields > std::u32::MAX as usize {
                bail!(
                    "Too many tagged fields to encode ({} fields)",
                    num_tagged_fields
                );
            }
            types::UnsignedVarInt.encode(buf, num_tagged_fields as u32)?;

            write_unknown_tagged_fields(buf, 0.., &self.unknown_tagged_fields)?;
        }
        Ok(())
    }
    fn compute_size(&self, version: i16) -> Result<usize> {
        let mut total_size = 0;
        if version >= 5 {
            total_size += types::CompactString.compute_size(&self.member_id)?;
        } else {
            total_size += types::String.compute_size(&self.member_id)?;
        }
        if version >= 4 {
            if version >= 5 {
                total_size += types::CompactString.compute_size(&self.group_instance_id)?;
            } else {
                total_size += types::String.compute_size(&self.group_instance_id)?;
            }
        }
        if version >= 5 {
            total_size += types::CompactString.compute_size(&self.client_id)?;
        } else {
            total_size += types::String.compute_size(&self.client_id)?;
        }
        if version >= 5 {
            total_size += types::CompactString.compute_size(&self.client_host)?;
        } else {
            total_size += types::String.compute_size(&self.client_host)?;
        }
        if version >= 5 {
            total_size += types::CompactBytes.compute_size(&self.member_metadata)?;
        } else {
            total_size += types::Bytes.compute_size(&self.member_metadata)?;
        }
        if version >= 5 {
            total_size += types::CompactBytes.compute_size(&self.member_assignment)?;
        } else {
            total_size += types::Bytes.compute_size(&self.member_assignment)?;
        }
        if version >= 5 {
            let num_tagged_fields = self.unknown_tagged_fields.len();
            if num_tagged_fields > std::u32::MAX as usize {
                bail!(
                    "Too many tagged fields to encode ({} fields)",
                    num_tagged_fields
                );
            }
            total_size += types::UnsignedVarInt.compute_size(num_tagged_fields as u32)?;

            total_size += compute_unknown_tagged_fields_size(&self.unknown_tagged_fields)?;
        }
        Ok(total_size)
    }
}

#[cfg(feature = "client")]
impl Decodable for DescribedGroupMember {
    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {
        if version < 0 || version > 6 {
            bail!("specified version not supported by this message type");
        }
        let member_id = if version >= 5 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let group_instance_id = if version >= 4 {
            if version >= 5 {
                types::CompactString.decode(buf)?
            } else {
                types::String.decode(buf)?
            }
        } else {
            None
        };
        let client_id = if version >= 5 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let client_host = if version >= 5 {
            types::CompactString.decode(buf)?
        } else {
            types::String.decode(buf)?
        };
        let member_metadata = if version >= 5 {
            types::CompactBytes.decode(buf)?
        } else {
            types::Bytes.decode(buf)?
        };
        let member_assignment = if version >= 5 {
            types::CompactBytes.decode(buf)?
        } else {
            types::Bytes.decode(buf)?
        };
        let mut unknown_tagged_fields = BTreeMap::new();
        if version >= 5 {
            let num_tagged_fields = types::UnsignedVarInt.decode(buf)?;
            for _ in 0..num_tagged_fields {
                let tag: u32 = types::UnsignedVarInt.decode(buf)?;
                let size: u32 = types::UnsignedVarInt.decode(buf)?;
                let unknown_value = buf.try_get_bytes(size as usize)?;
                unknown_tagged_fields.insert(tag as i32, unknown_value);
            }
        }
        Ok(Self {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            member_metadata,
            member_assignment,
            unknown_tagged_fields,
        })
    }
}

impl Default for DescribedGroupMember {
    fn default() -> Self {
        Self {
            member_id: Default::default(),
            group_instance_id: None,
            client_id: Default::default(),
            client_host: Default::default(),
            member_metadata: Default::default(),
            member_assignment: Default::default(),
            unknown_tagged_fields: BTreeMap::new(),
        }
    }
}

impl Message for DescribedGroupMember {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 6 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}

impl HeaderVersion for DescribeGroupsResponse {
    fn header_version(version: i16) -> i16 {
        if version >= 5 {
            1
        } else {
            0
        }
    }
}
